"""Neither the pytest process nor the forkserver touches CUDA; only forked children (measured, probe) may.

A child forked from a process that initialised CUDA cannot use CUDA, so one
CUDA call in the forkserver's preload (bitsandbytes, imported by peft, asks
torch.cuda at import) would break every measured child on a GPU host. These
tests put tests/integration/cuda_trap.py in front of torch.cuda: each call to its entry
points is recorded with the process that made it, and goes through unchanged.
On this CPU host the calls return "no CUDA"; the trap sees the call all the same,
which is what would initialise CUDA on a GPU host.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
TRAP = Path(__file__).with_name("cuda_trap.py")
PARENT_MODULES = ["gpu_budget", "gpu_budget.pytest_plugin", "gpu_budget.session.session", "gpu_budget.session.xdist",
                  "gpu_budget.isolate.placement", "gpu_budget.session.fixture", "gpu_budget.search.remediate"]


def project_preload() -> list[str]:
    """The forkserver's preload as pyproject.toml declares it, plus what isolate.forkserver adds in front."""
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    return ["gpu_budget.isolate.forkserver_reaper", "gpu_budget.isolate.child", "gpu_budget.measure.meter",
            *ini["gpu_budget_preload"]]


def inherited_path() -> list[str]:
    """The PYTHONPATH this run has (a GPU host's carried wheels and plugin live there), to keep behind ours."""
    return [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def trapped_imports(tmp_path: Path, modules: list[str], then: str = "") -> tuple[list[dict], str]:
    """Import `modules` (then run `then`) in a fresh interpreter under the trap; its records and its output."""
    log = tmp_path / "trap.jsonl"
    code = ("import importlib, sys\nimport cuda_trap\nfor name in sys.argv[1:]:\n"
            "    try:\n        importlib.import_module(name)\n"
            "    except ImportError as exc:\n        print('not importable:', name, exc)\n" + then)
    env = {**os.environ, "GPU_BUDGET_CUDA_TRAP": str(log),  # memtests/: the case studies' runners, as pytest puts it
           "PYTHONPATH": os.pathsep.join([str(TRAP.parent), str(ROOT / "memtests"), *inherited_path()])}
    done = subprocess.run([sys.executable, "-c", code, *modules], check=False, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return records, done.stdout


def test_the_trap_records_a_cuda_call_and_the_process_that_made_it(tmp_path):
    """The check below can fail: a planted call is seen, from an unforked process."""
    records, _ = trapped_imports(tmp_path, ["torch"], then="import torch\ntorch.cuda.is_available()\n")
    assert records and records[0]["fn"] == "torch.cuda.is_available"
    # a CPU build answers from Python; a CUDA build also asks the driver for its device count
    assert {r["fn"] for r in records[1:]} <= {"torch._C._cuda_getDeviceCount"}, records
    assert records[0]["forked"] is False and records[0]["pid"] > 0


@pytest.mark.skipif(not all(map(__import__("importlib.util").util.find_spec, ("peft", "bitsandbytes"))),
                    reason="needs peft and bitsandbytes installed")
def test_importing_peft_asks_torch_cuda_so_it_stays_out_of_the_preload(tmp_path):
    """Why peft is not preloaded: importing it makes bitsandbytes call torch.cuda (is_available, device_count)."""
    records, _ = trapped_imports(tmp_path, ["torch", "peft"])
    called = {r["fn"] for r in records}
    assert {"torch.cuda.is_available", "torch.cuda.device_count"} <= called, records
    assert any("bitsandbytes" in frame for r in records for frame in r["stack"])
    assert "peft" not in project_preload()


def test_the_preload_list_and_the_plugin_make_no_cuda_call(tmp_path):
    """Every module the forkserver preloads (pyproject.toml's list, the runners included) and the plugin's parent side."""
    records, out = trapped_imports(tmp_path, [*project_preload(), *PARENT_MODULES])
    assert records == [], "CUDA called at import in the forkserver or the parent:\n" + "\n".join(
        f"{r['fn']} from {r['stack'][-1] if r['stack'] else '?'}" for r in records)
    assert "not importable" not in out, out  # an import that failed would have proven nothing


RUNNER = '''
import torch


def uses_cuda(ctx):
    """A measured child may ask CUDA: the trap must see it, from a forked process."""
    with ctx.meter.phase("load"):
        ctx.params["seen"] = torch.cuda.is_available()
    with ctx.meter.phase("train_step_1", step=1):
        held = torch.ones(1 << 20)
    return {"cuda": ctx.params["seen"], "held": held.numel()}
'''

TESTS = '''
import pytest
from gpu_budget import Scenario

S = Scenario(name="cuda_user", run="runners:uses_cuda")


@pytest.mark.gpu_budget(ram="4 GiB")
def test_one(gpu_budget):
    assert gpu_budget.measure(S).info["cuda"] is (gpu_budget.device == "cuda")  # this file also runs on a GPU host


@pytest.mark.gpu_budget(ram="4 GiB")
def test_two(gpu_budget):
    gpu_budget.measure(S.with_params(other=1))
'''


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_gated_session_calls_cuda_only_in_forked_children(pytester, workers, monkeypatch):
    """pytest --gpu-budget with a forkserver preloading torch: the parent, the xdist workers and the forkserver
    make no CUDA call; the probe and the measured children (forked) do, and the trap sees them."""
    log = pytester.path / "trap.jsonl"
    pytester.makeini("[pytest]\ngpu_budget_preload = torch\n")
    pytester.makepyfile(runners=RUNNER, test_mem=TESTS, sitecustomize=TRAP.read_text())
    monkeypatch.delenv("CI", raising=False)
    # sitecustomize: every interpreter arms the trap
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pytester.path), *inherited_path()]))
    monkeypatch.setenv("GPU_BUDGET_CUDA_TRAP", str(log))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "--gpu-budget", *workers)
    result.assert_outcomes(passed=2)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    unforked = [r for r in records if not r["forked"]]
    assert unforked == [], "CUDA called outside a forked child:\n" + "\n".join(
        f"{r['fn']} in pid {r['pid']} ({r['argv']}) from {r['stack'][-1]}" for r in unforked)
    children = {r["pid"] for r in records}
    called = [r["fn"] for r in records]
    assert called.count("torch.cuda.is_available") >= 3  # the probe (one per worker) and both measured children
    assert len(children) >= 3 and os.getpid() not in children


def test_the_estimator_makes_no_cuda_call(tmp_path):
    """The estimate runs in the CLI's process and in the pytest process of an exploration: its fake tensors must not
    ask torch.cuda (torch's FakeTensorMode asks is_available() on entry and on every op, which initialises the
    CUDA driver on a GPU host). S5's builder uses torch alone, so any call is the estimator's own."""
    then = ("from s5_generic_oom.scenarios import S5\nfrom gpu_budget.estimate import estimate_scenario\n"
            "from gpu_budget.estimate.cuda import Device\n"
            "for cuda in (False, True):\n    print('estimated', estimate_scenario(S5, device=Device(cuda=cuda)).step_peak)\n")
    records, out = trapped_imports(tmp_path, ["gpu_budget.estimate"], then=then)
    assert out.count("estimated ") == 2, out
    assert records == [], "the estimator called CUDA:\n" + "\n".join(
        f"{r['fn']} from {r['stack'][-1] if r['stack'] else '?'}" for r in records[:5])
