"""An xdist controller SIGKILLed mid-run (the OOM killer, a runner's hard stop) keeps the entries of the tests that passed.

Nothing of the controller's end runs then. A serial session has written each
entry as its test reported, so its store holds every passed test's; the
controller writes each entry as the report carrying it arrives
(session/xdist.py), so `-n 2` leaves the same store, every file valid JSON.
The kill is deterministic: the slow case's measured child waits until the
session has logged both quick tests' teardowns (after the gate's own hooks
have handled them), then SIGKILLs the pytest process at the top.
"""

import json
import os
import signal
import subprocess
import sys

import pytest
from inner_session import leave_outer_run

RUNNERS = '''
import os, pathlib, signal, time


def quick(ctx):
    with ctx.meter.phase("load"):
        held = b"\\x01" * (8 << 20)
    return {"held": len(held)}


def kill_session(ctx):
    """Once both quick tests are logged, SIGKILL the session's top process, then wait to be ended with it."""
    ctx.meter.start("load")
    deadline = time.monotonic() + 120
    while len(list(pathlib.Path(".").glob("done-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    os.kill(int(pathlib.Path("session.pid").read_text()), signal.SIGKILL)
    time.sleep(120)
'''

CONFTEST = '''
import os

import pytest

TOP = "PYTEST_XDIST_WORKER" not in os.environ


def pytest_configure(config):
    if TOP:
        open("session.pid", "w").write(str(os.getpid()))


@pytest.hookimpl(trylast=True)  # after the gate's hooks have handled the report
def pytest_runtest_logreport(report):
    if TOP and report.when == "teardown" and report.passed and "quick" in report.nodeid:
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
def test_killed(gpu_budget):
    gpu_budget.measure(Scenario(name="slow", run="runners:kill_session"))
'''


@pytest.mark.parametrize("spread", [["-n", "2"], ["-p", "no:xdist"]], ids=["xdist", "serial"])
def test_a_sigkilled_session_keeps_the_passed_tests_entries(pytester, monkeypatch, spread):
    """Before, under -n 2 the controller held every entry for its session's end, which a SIGKILL never reaches: no
    baseline file at all (`ValueError: not enough values to unpack (expected 1, got 0)`), where the serial session
    had written both entries."""
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, conftest=CONFTEST, test_mem=TESTS)
    leave_outer_run(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", *spread, "--gpu-budget",
           "--gpu-budget-baselines=baselines", "-q"]
    done = subprocess.run(cmd, cwd=pytester.path, capture_output=True, text=True, timeout=240, check=False,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(pytester.path),
                                                                            os.environ.get("PYTHONPATH", "")])})
    out = done.stdout + done.stderr
    assert done.returncode == -signal.SIGKILL, out[-3000:]
    (path,) = (pytester.path / "baselines").rglob("*.json")
    entries = json.loads(path.read_text())["entries"]["tiny"]
    assert sorted(entries) == ["test_mem.py::test_quick", "test_mem.py::test_quick_too"], out[-3000:]
