"""Shared helpers for the plugin's own tests: a throwaway project with cheap, torch-free scenarios."""

import textwrap

import pytest

pytest_plugins = ["pytester"]

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


@pytest.fixture
def project(pytester):
    """A pytester project whose measured children preload nothing (fast, torch-free)."""
    pytester._monkeypatch.delenv("CI", raising=False)  # the inner runs are not CI runs unless a test says so
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS)

    def write_tests(body: str):
        pytester.makepyfile(test_mem="import pytest\nfrom gpu_budget import Scenario\n" + textwrap.dedent(body))
        return pytester

    return write_tests
