"""Memory snapshots of CUDA budget failures, end to end, on a host without a GPU.

The throwaway project runs on a stand-in `torch` (tests/fake_torch.py, preloaded
by the forkserver instead of the real one) whose CUDA allocator reports the
peaks a runner plants and whose memory recorder writes a small pickle.
Everything else is the real path: the probe, the hardware key, the meter's
CUDA phases, judging, the second run of a failing case with the recorder on,
keeping its snapshot next to the report, and the summary saying how to open
it. The numbers are planted, never measured: nothing here is a GPU figure.
"""

import json
import pickle

from conftest import child_runs

TESTS = '''
@pytest.mark.gpu_budget(vram="10 GiB")
def test_fits(gpu_budget):
    assert gpu_budget.measure(S(8)).info["recording"] is False  # the judged run never records


@pytest.mark.gpu_budget(vram="10 GiB")
def test_over(gpu_budget):
    gpu_budget.measure(S(12))


@pytest.mark.gpu_budget(vram="10 GiB", expect="over-budget")
def test_reproduces(gpu_budget):
    gpu_budget.measure(S(12))


@pytest.mark.gpu_budget(vram="10 GiB")
def test_crashes(gpu_budget):
    gpu_budget.measure(S(4, fail="oom"))
'''


def run(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
                                         "--gpu-budget", *args)


def test_a_failing_cuda_case_runs_again_with_the_recorder_and_leaves_a_snapshot_next_to_the_report(fake_cuda):
    pytester = fake_cuda(TESTS)
    result = run(pytester, "--gpu-budget-json=out/report.json", "--gpu-budget-plots=out/plots")
    result.assert_outcomes(passed=2, failed=2)
    report = json.loads((pytester.path / "out" / "report.json").read_text())
    assert report["hardware"]["key"] == "nvidia-fake-gpu-16gb"
    rows = {r["nodeid"].split("::")[-1]: r for r in report["results"]}
    assert rows["test_over"]["verdict"] == "over-budget" and rows["test_crashes"]["verdict"] == "error"

    # the judged runs never record; each failing case ran once more, recording, and only that run dumped
    runs = child_runs(pytester)
    assert [r["recording"] for r in runs] == [False, False, True, False, False, True]  # fits, over x2, reproduces, crashes x2
    for name in ("test_over", "test_crashes"):
        assert rows[name]["snapshot_run"]["peaks"]["vram_allocated"] is not None  # reported beside the row, not judged
    assert rows["test_over"]["peaks"]["vram_allocated"] == 12 * 2**30  # the verdict's figure is the first run's

    folder = pytester.path / "out" / "gpu-budget-snapshots"
    assert sorted(p.name for p in folder.iterdir()) == ["test_mem__test_crashes.pickle", "test_mem__test_over.pickle"]
    for name in ("test_over", "test_crashes"):
        assert rows[name]["snapshot"] == str(folder / f"test_mem__{name}.pickle")
        dumped = pickle.loads((folder / f"test_mem__{name}.pickle").read_bytes())
        assert dumped["recorded"] == ["all"]  # recorded through the run, dumped before the recorder stopped
    assert "snapshot" not in rows["test_fits"] and "snapshot" not in rows["test_reproduces"]  # passing: no second run

    result.stdout.fnmatch_lines(["*test_over: memory snapshot *test_mem__test_over.pickle*pytorch.org/memory_viz*"])
    summary = (pytester.path / "summary.md").read_text()
    assert "**Memory snapshots of the failing CUDA cases**" in summary
    assert "https://pytorch.org/memory_viz" in summary and "python -m torch.cuda._memory_viz trace_plot" in summary
    # the link text escaped as markdown ("__" would start emphasis), its target percent-encoded
    assert "- test_mem.py::test_over: [gpu-budget-snapshots/test_mem\\_\\_test_over.pickle](" in summary, summary
    assert (pytester.path / "out" / "plots" / "test_mem__test_over.png").exists()


def test_no_second_run_with_snapshots_off_or_where_nothing_failed(fake_cuda):
    pytester = fake_cuda(TESTS)
    result = run(pytester, "--gpu-budget-json=report.json", "--gpu-budget-snapshot=never", "-k", "over or fits")
    result.assert_outcomes(passed=1, failed=1)
    assert [r["recording"] for r in child_runs(pytester)] == [False, False]
    assert not (pytester.path / "gpu-budget-snapshots").exists()
    assert "Memory snapshots" not in (pytester.path / "summary.md").read_text()
