"""A child during which the CUDA driver's compute cache grew is measured again, and judged on the second run.

The driver compiles a PTX-only kernel in the first process on a machine that
needs it, inside that process, and caches the result: the first child paid the
compiler in host RAM, later ones do not (measure/compute_cache.py). On this CPU
host the runner plays the driver: its first run writes into $CUDA_CACHE_PATH
and holds 64 MiB more, as the compiler would.
"""

import json

RUNNERS = '''
import os
from pathlib import Path


def run(ctx):
    cache = Path(os.environ["CUDA_CACHE_PATH"])
    with ctx.meter.phase("train_step_1", step=1):
        compiled = None
        if ctx.params.get("jit") and not (cache / "kernel.bin").exists():  # the "driver" compiles once per machine
            compiled = b"\\x01" * (64 << 20)
            cache.mkdir(parents=True, exist_ok=True)
            (cache / "kernel.bin").write_bytes(b"\\x02" * 4096)
        held = b"\\x03" * (32 << 20)
    return {"compiled": compiled is not None, "held": len(held)}
'''

TESTS = '''
import pytest
from gpu_budget import Scenario

S = Scenario(name="jit", run="runners:run")


@pytest.mark.gpu_budget(ram="2 GiB")
def test_compiles_once(gpu_budget):
    assert gpu_budget.measure(S.with_params(jit=True)).info["compiled"] is False  # the judged run is the second


@pytest.mark.gpu_budget(ram="2 GiB")
def test_compiles_nothing(gpu_budget):
    gpu_budget.measure(S)
'''


def test_a_child_whose_driver_compiled_is_measured_again_and_both_runs_are_reported(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("CUDA_CACHE_PATH", str(pytester.path / "compute-cache"))
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_mem=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["CUDA driver JIT: the first run is not judged*",
                                 ("test_mem.py::test_compiles_once: the CUDA driver's compute cache grew during the "
                                  "first run (+4.00 KiB*measured again with the kernels cached*")])
    rows = {row["nodeid"].split("::")[1]: row for row in json.loads((pytester.path / "r.json").read_text())["results"]}
    rerun = rows["test_compiles_once"]["jit_rerun"]
    assert rerun["cache_growth"] == 4096
    # the compiler's 64 MiB is in the first run's figure and not in the judged one
    assert rerun["first_peaks"]["ram"] - rows["test_compiles_once"]["peaks"]["ram"] > 48 * 2**20
    assert "jit_rerun" not in rows["test_compiles_nothing"]


def test_without_a_compile_each_case_runs_once(pytester, monkeypatch):
    """The cache already holds the kernel: no case is measured twice (the probe counts every child)."""
    cache = pytester.path / "compute-cache"
    cache.mkdir()
    (cache / "kernel.bin").write_bytes(b"\x02" * 4096)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("CUDA_CACHE_PATH", str(cache))
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_mem=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=2)
    assert "CUDA driver JIT" not in result.stdout.str()
    assert all("jit_rerun" not in row for row in json.loads((pytester.path / "r.json").read_text())["results"])


NEIGHBOUR = '''
import time
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_compiles_nothing(gpu_budget):
    gpu_budget.measure(Scenario(name="slow", run="runners:slow"))
'''


def test_a_cache_another_session_grew_meanwhile_is_not_said_to_be_the_cases_compile(pytester, monkeypatch):
    """Two sessions on one machine share the driver's cache: the other's compile lands in it while this case runs.
    The case is measured again all the same (the cache cannot tell whose compile it was), but its row must not say
    the driver compiled kernels in its first run, which nothing showed."""
    import subprocess
    import sys

    cache = pytester.path / "compute-cache"
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("CUDA_CACHE_PATH", str(cache))
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS + '''

def slow(ctx):
    import time
    with ctx.meter.phase("train_step_1", step=1):
        Path(os.environ["CUDA_CACHE_PATH"]).with_name("started").touch()
        time.sleep(3)
''', test_mem=NEIGHBOUR)
    neighbour = subprocess.Popen([sys.executable, "-c", f'''
import os, time
from pathlib import Path
cache = Path({str(cache)!r})
while not cache.with_name("started").exists():
    time.sleep(0.05)
cache.mkdir()
(cache / "others-kernel.bin").write_bytes(b"\\x02" * 4096)  # another session's driver, compiling
'''])
    try:
        result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    finally:
        neighbour.wait(30)
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "compiled kernels in the first run" not in out and "its compiler was in its host RAM" not in out
    result.stdout.fnmatch_lines([("test_mem.py::test_compiles_nothing: the CUDA driver's compute cache grew during the "
                                  "first run (+4.00 KiB: a compile of this case's, or of another process on the "
                                  "machine; RAM tree*measured again*")])
