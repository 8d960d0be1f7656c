"""Memory snapshots of CUDA budget failures, end to end, on a host without a GPU.

The throwaway project ships a stand-in `torch` module (preloaded by the
forkserver instead of the real one) whose CUDA allocator reports the peaks a
runner sets and whose memory recorder writes a small pickle. Everything
else is the real path: the probe, the hardware key, the meter's CUDA
phases, judging, keeping the snapshot of a failure next to the report and
deleting the others, and the summary saying how to open it. The numbers are
planted, never measured: nothing here is a GPU figure.
"""

import json
import pickle

import pytest

FAKE_TORCH = '''
"""A stand-in for torch with one CUDA device, for tests: peaks are what the runner plants."""
import pickle
import types

version = types.SimpleNamespace(cuda="12.4")
recorder = {"on": False, "calls": []}


def set_num_threads(n):
    pass


class _Cuda:
    peak = 0

    def is_available(self):
        return True

    def current_device(self):
        return 0

    def get_device_properties(self, device):
        return types.SimpleNamespace(name="Fake GPU", total_memory=16 * 2**30, uuid="GPU-0000")

    def synchronize(self, device=None):
        pass

    def reset_peak_memory_stats(self, device=None):
        _Cuda.peak = 0

    def max_memory_allocated(self, device=None):
        return _Cuda.peak

    def max_memory_reserved(self, device=None):
        return _Cuda.peak + 2**30

    def plant(self, nbytes):
        _Cuda.peak = max(_Cuda.peak, nbytes)


def _record_memory_history(enabled="all", **kwargs):
    recorder["on"] = enabled is not None
    recorder["calls"].append(enabled)


def _dump_snapshot(path):
    with open(path, "wb") as fh:
        pickle.dump({"segments": [], "device_traces": [], "recorded": list(recorder["calls"])}, fh)


cuda = _Cuda()
cuda.memory = types.SimpleNamespace(_record_memory_history=_record_memory_history, _dump_snapshot=_dump_snapshot)
'''

RUNNER = '''
import torch


def gpu(ctx):
    with ctx.meter.phase("load"):
        torch.cuda.plant(1 << 30)
    for step in range(1, 4):
        with ctx.meter.phase(f"train_step_{step}", step=step):
            torch.cuda.plant(ctx.params["gib"] << 30)
            if ctx.params.get("boom") and step == 2:
                raise RuntimeError("CUDA out of memory (planted)")
    return {"recording": torch.recorder["on"]}
'''

TESTS = '''
import pytest
from gpu_budget import Scenario


def S(gib, boom=False):
    return Scenario(name="gpu", run="runners:gpu", params={"gib": gib, "boom": boom})


@pytest.mark.gpu_budget(vram="10 GiB")
def test_fits(gpu_budget):
    assert gpu_budget.measure(S(8))["info"]["recording"]


@pytest.mark.gpu_budget(vram="10 GiB")
def test_over(gpu_budget):
    gpu_budget.measure(S(12))


@pytest.mark.gpu_budget(vram="10 GiB", expect="over-budget")
def test_reproduces(gpu_budget):
    gpu_budget.measure(S(12))


@pytest.mark.gpu_budget(vram="10 GiB")
def test_crashes(gpu_budget):
    gpu_budget.measure(S(4, boom=True))
'''


@pytest.fixture
def fake_cuda(pytester):
    pytester.makeini("[pytest]\ngpu_budget_preload = torch\n")
    pytester.makepyfile(torch=FAKE_TORCH, runners=RUNNER, test_mem=TESTS)
    pytester._monkeypatch.delenv("CI", raising=False)
    pytester._monkeypatch.setenv("PYTHONPATH", str(pytester.path))  # the forkserver finds the stand-in first
    pytester._monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "summary.md"))
    return pytester


def test_a_cuda_budget_failure_leaves_a_snapshot_next_to_the_report(fake_cuda):
    result = fake_cuda.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
                                            "--gpu-budget", "--gpu-budget-json=out/report.json",
                                            "--gpu-budget-plots=out/plots")
    result.assert_outcomes(passed=2, failed=2)
    report = json.loads((fake_cuda.path / "out" / "report.json").read_text())
    assert report["hardware"]["key"] == "nvidia-fake-gpu-16gb"
    rows = {r["nodeid"].split("::")[-1]: r for r in report["results"]}
    assert rows["test_over"]["verdict"] == "over-budget" and rows["test_crashes"]["verdict"] == "error"

    folder = fake_cuda.path / "out" / "gpu-budget-snapshots"
    assert sorted(p.name for p in folder.iterdir()) == ["test_mem__test_crashes.pickle", "test_mem__test_over.pickle"]
    for name in ("test_over", "test_crashes"):
        assert rows[name]["snapshot"] == str(folder / f"test_mem__{name}.pickle")
        dumped = pickle.loads((folder / f"test_mem__{name}.pickle").read_bytes())
        assert dumped["recorded"] == ["all"]  # recorded through the measured run, dumped before it stopped
    assert "snapshot" not in rows["test_fits"] and "snapshot" not in rows["test_reproduces"]  # passing: deleted

    result.stdout.fnmatch_lines(["*test_over: memory snapshot *test_mem__test_over.pickle*pytorch.org/memory_viz*"])
    summary = (fake_cuda.path / "summary.md").read_text()
    assert "**Memory snapshots of the failing CUDA cases**" in summary
    assert "https://pytorch.org/memory_viz" in summary and "python -m torch.cuda._memory_viz trace_plot" in summary
    assert "- test_mem.py::test_over: [gpu-budget-snapshots/test_mem__test_over.pickle](" in summary
    assert (fake_cuda.path / "out" / "plots" / "test_mem__test_over.png").exists()


def test_snapshots_are_not_taken_where_nothing_failed(fake_cuda):
    result = fake_cuda.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
                                            "--gpu-budget", "--gpu-budget-json=report.json", "-k", "fits")
    result.assert_outcomes(passed=1)
    assert not (fake_cuda.path / "gpu-budget-snapshots").exists()
    assert "Memory snapshots" not in (fake_cuda.path / "summary.md").read_text()
