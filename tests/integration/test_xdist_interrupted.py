"""A gate under `-n 2` stopped by Ctrl-C keeps the rows its workers measured, and leaves no measured child behind.

An xdist worker ships its session data to the controller only when it
finishes; a worker stopped mid-case never does. Each test's rows also ride on
its call report (session/xdist.py), so the report still holds every case that
finished, and the gate fails saying a worker did not finish. The interrupt
here is deterministic: the slow case's measured child waits until the
controller has logged both quick cases, then sends SIGINT to the session's
process group, as Ctrl-C in a terminal or a CI job's timeout does.
"""

import json
import os
import signal
import subprocess
import sys

import pytest
from inner_session import alive, leave_outer_run

RUNNERS = '''
import os, pathlib, signal, time


def quick(ctx):
    with ctx.meter.phase("load"):
        held = b"\\x01" * (8 << 20)
    return {"held": len(held)}


def interrupt(ctx):
    """Once both quick cases are logged, Ctrl-C the session (its process group), then wait to be ended."""
    pathlib.Path("slow.pid").write_text(str(os.getpid()))
    ctx.meter.start("load")
    deadline = time.monotonic() + 120
    while len(list(pathlib.Path(".").glob("done-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(os.getpgid(os.getppid()), signal.SIGINT)  # the forkserver's group: the session's
    time.sleep(120)
'''

CONFTEST = '''
import os


def pytest_runtest_logreport(report):
    """On the controller: a file per passed call, which the slow case waits for."""
    if report.when == "call" and report.passed and "PYTEST_XDIST_WORKER" not in os.environ:
        open("done-" + report.nodeid.split("::")[-1], "w").close()
'''

TESTS = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="1 GiB")
def test_quick(gpu_budget):
    gpu_budget.measure(Scenario(name="quick", run="runners:quick"))


@pytest.mark.gpu_budget(ram="1 GiB")
def test_quick_too(gpu_budget):
    gpu_budget.measure(Scenario(name="quick_too", run="runners:quick"))


@pytest.mark.gpu_budget(ram="1 GiB")
def test_interrupted(gpu_budget):
    gpu_budget.measure(Scenario(name="slow", run="runners:interrupt"))
'''


def test_ctrl_c_under_xdist_keeps_the_finished_rows_and_fails_the_gate(pytester, monkeypatch):
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, conftest=CONFTEST, test_mem=TESTS)
    leave_outer_run(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "2", "--gpu-budget",
           "--gpu-budget-json=r.json", "--gpu-budget-baselines=baselines", "-q"]
    done = subprocess.run(cmd, cwd=pytester.path, capture_output=True, text=True, timeout=240, check=False,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(pytester.path),
                                                                            os.environ.get("PYTHONPATH", "")])},
                          start_new_session=True,  # its own process group, so the SIGINT stays in it
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # a background job's SIG_IGN
    out = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    report = json.loads((pytester.path / "r.json").read_text())
    assert sorted(r["nodeid"] for r in report["results"]) == ["test_mem.py::test_quick",
                                                              "test_mem.py::test_quick_too"], out[-3000:]
    assert any("did not finish (interrupted, or it crashed)" in p for p in report["gate_problems"]), report
    assert "gpu-budget gate FAILED: xdist worker gw" in out, out[-3000:]
    assert not alive(int((pytester.path / "slow.pid").read_text())), "the interrupted case's child outlived it"



CRASHING = '''
import os

import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="1 GiB")
def test_recorded(gpu_budget):
    gpu_budget.measure(Scenario(name="quick", run="runners:quick"))


def test_crash():
    os._exit(3)  # the worker dies before it ships the entry test_recorded measured
'''


def test_a_crashed_worker_s_rows_do_not_claim_the_entries_it_never_shipped(pytester, monkeypatch):
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_mem=CRASHING)
    leave_outer_run(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-n", "1", "--gpu-budget",
                                           "--gpu-budget-json=r.json", "--gpu-budget-baselines=baselines")
    result.assert_outcomes(passed=1, failed=1)
    (row,) = json.loads((pytester.path / "r.json").read_text())["results"]
    assert not list((pytester.path / "baselines").rglob("*.json"))  # its entry was never written
    assert "recorded" not in row["message"], row["message"]
    assert "its xdist worker did not finish, so no baseline entry was written" in row["message"], row["message"]
    result.stdout.fnmatch_lines(["gpu-budget gate FAILED: xdist worker gw0 did not finish*"])
