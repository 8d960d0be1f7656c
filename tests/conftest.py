"""Shared helpers for the plugin's own tests: a throwaway project with cheap, torch-free scenarios."""

import os
import textwrap
from pathlib import Path

import pytest

pytest_plugins = ["pytester", "imported_once"]  # imported_once: see its docstring

RUNNERS = '''
import os, signal, time

def alloc(ctx):
    """Holds `mib` MiB through a load phase and adds `mib` more in each of three steps."""
    with ctx.meter.phase("load"):
        held = b"\\x01" * (ctx.params["mib"] << 20)
    for step in range(1, 4):
        with ctx.meter.phase(f"train_step_{step}", step=step):
            extra = b"\\x01" * (ctx.params["mib"] << 20)
            del extra
    return {"held": len(held)}

def sigkill(ctx):
    with ctx.meter.phase("load"):
        held = b"\\x01" * (64 << 20)
    ctx.meter.start("train_step_1", step=1)
    more = b"\\x01" * (128 << 20)
    os.kill(os.getpid(), signal.SIGKILL)

def hang(ctx):
    ctx.meter.start("load")
    held = b"\\x01" * (32 << 20)
    time.sleep(600)

def environ(ctx):
    """What the measured child's environment holds of the kernel-dispatch pin and the thread count."""
    with ctx.meter.phase("load"):
        held = b"\\x01" * (ctx.params.get("mib", 1) << 20)
    names = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS", "OMP_NUM_THREADS")
    return {"held": len(held), **{name: os.environ.get(name) for name in names}}

def boom(ctx):
    with ctx.meter.phase("load"):
        raise RuntimeError("the scenario broke")
'''


CHECKOUT_PLUGIN = Path(__file__).resolve().parents[1] / "plugin"  # the gpu_budget these tests test


def inner_pythonpath(monkeypatch, *first) -> str:
    """Set PYTHONPATH for the inner sessions and processes a test starts: `first`, then this checkout's plugin/
    folder, so that they import the gpu_budget under test, not whichever one is installed or another path holds, then
    the PYTHONPATH this run was given (a GPU host's carried wheels live there), kept behind, never dropped."""
    parts = [*map(str, first), str(CHECKOUT_PLUGIN), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    path = os.pathsep.join(dict.fromkeys(p for p in parts if p))
    monkeypatch.setenv("PYTHONPATH", path)
    return path


@pytest.fixture(autouse=True)
def checkout_first(monkeypatch):
    """Every process a test starts (pytester's inner sessions, their forkservers and commands, subprocesses given
    os.environ) imports this checkout's gpu_budget: a test that puts a folder of its own first prepends it to
    os.environ["PYTHONPATH"], never replaces it."""
    inner_pythonpath(monkeypatch)


@pytest.fixture
def project_of(pytester, monkeypatch):
    """project, with a runners module of the test's own: project_of(text) makes it, and returns project's writer of
    the test module."""
    def make(runners: str):
        monkeypatch.delenv("CI", raising=False)  # the inner runs are not CI runs unless a test says so
        pytester.makeini("[pytest]\ngpu_budget_preload =\n")
        pytester.makepyfile(runners=runners)

        def write_tests(body: str):
            pytester.makepyfile(test_mem="import pytest\nfrom gpu_budget import Scenario\n" + textwrap.dedent(body))
            return pytester

        return write_tests

    return make


@pytest.fixture
def project(project_of):
    """A pytester project whose measured children preload nothing (fast, torch-free), its runners module RUNNERS:
    project(body) writes test_mem.py (pytest and Scenario imported) and returns pytester."""
    return project_of(RUNNERS)


FAKE_CUDA_RUNNER = '''
import json
import torch


def gpu(ctx):
    """Plants `gib` GiB of allocated GPU memory per step; fail="oom" or "sticky" breaks step 2 that way."""
    with open("runs.jsonl", "a") as fh:  # one line per child: was the allocation recorder on?
        fh.write(json.dumps({"recording": torch.recorder["on"], "fixes": list(ctx.fixes)}) + "\\n")
    ctx.meter.start("load")  # start() as the real runners do: the child closes the phase open at a failure
    torch.cuda.plant(1 << 30)
    for step in range(1, 4):
        ctx.meter.start(f"train_step_{step}", step=step)
        torch.cuda.plant(ctx.params["gib"] << 30)
        if step == 2 and ctx.params.get("fail") == "oom":
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (planted)")
        if step == 2 and ctx.params.get("fail") == "sticky":
            torch.cuda.make_sticky("CUDA error: an illegal memory access was encountered (planted)")
            raise RuntimeError("CUDA error: an illegal memory access was encountered (planted)")
    ctx.meter.stop()
    return {"recording": torch.recorder["on"], "device": ctx.device}
'''


@pytest.fixture
def fake_cuda(pytester, monkeypatch):
    """A throwaway project on a stand-in CUDA device (tests/fake_torch.py): the CUDA path without a GPU, no figures."""
    pytester.makeini("[pytest]\ngpu_budget_preload = torch\n")
    pytester.makepyfile(torch=(Path(__file__).with_name("fake_torch.py")).read_text(), runners=FAKE_CUDA_RUNNER)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    inner_pythonpath(monkeypatch, pytester.path)  # the forkserver finds the stand-in first, then this checkout
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "summary.md"))

    def write_tests(body: str):
        pytester.makepyfile(test_mem="import pytest\nfrom gpu_budget import Scenario\n\n\n"
                                     "def S(gib, **params):\n"
                                     "    return Scenario(name='gpu', run='runners:gpu', params={'gib': gib, **params})\n"
                            + textwrap.dedent(body))
        return pytester

    return write_tests


def child_runs(pytester) -> list[dict]:
    """What each measured child of a fake_cuda project wrote: whether the allocation recorder was on."""
    import json

    path = pytester.path / "runs.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def refuse_a_json(monkeypatch):
    """Call it to have baseline writes to any file named a.json refused, as an unwritable folder refuses them (the
    tests run as root, where a read-only folder is still writable)."""
    from gpu_budget.judge import files

    write = files._write_atomic

    def refused(path, data):
        if path.name == "a.json":
            raise PermissionError(13, "Permission denied", str(path))
        write(path, data)

    return lambda: monkeypatch.setattr(files, "_write_atomic", refused)


@pytest.fixture(params=["uv", "pip"])
def tool(request):
    """Each installer an environment can be made with (isolate/environment.py), skipped where it is not found."""
    from gpu_budget.isolate.environment import EnvironmentFailed, find_tool

    try:
        return find_tool(request.param)
    except EnvironmentFailed as exc:
        pytest.skip(str(exc))
