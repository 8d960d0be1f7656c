"""A session SIGKILLed mid-case (the OOM killer, a runner's hard stop) takes its measured case with it.

Nothing of the session runs its cleanup then, and the forkserver stays up
while a child holds its pipe, so before lifecycle.end_with the measured child
(and whatever it started) trained on to its end for nobody; under xdist the
worker did too. Each test kills the process at the top and checks that every
process below it is gone within seconds, not at the case's 120 s.
"""

import os
import signal
import subprocess
import sys
import time

import pytest
from inner_session import leave_outer_run, left_after

from gpu_budget.isolate.lifecycle import OWNER_ENV
from gpu_budget.measure import procfs

RUNNERS = '''
import os, subprocess, sys, time


def sleeps(ctx):
    """A case that starts a process of its own, says who is running, and would run on for two minutes."""
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open("running.pids", "w") as fh:
        fh.write(f"{os.getpid()} {helper.pid} {os.getppid()}")
    time.sleep(120)
'''

TESTS = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="1 GiB")
def test_slow(gpu_budget):
    gpu_budget.measure(Scenario(name="slow", run="runners:sleeps"))
'''

DRIVER = '''
import sys
from pathlib import Path

from gpu_budget.declare.scenario import Scenario
from gpu_budget.isolate import forkserver, lifecycle
from gpu_budget.isolate.remote import Remote

lifecycle.claim()  # as a session does: the helper it starts ends with it
here = Path.cwd()
remote = Remote(sys.executable, [str(here), *forkserver.child_paths()])
(here / "helper.pid").write_text(str(remote.proc.pid))
remote.measure(Scenario(name="slow", run="runners:sleeps").to_json("tiny"), here / "assets", 300, threads=1, preload=())
'''


def _wait_for(path, seconds: float = 90) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return [int(p) for p in path.read_text().split()]
        time.sleep(0.1)
    raise AssertionError(f"{path.name} was never written")


def _start(pytester, *args: str, sigint: bool = True) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "--gpu-budget", "-q", *args]
    handler = signal.SIG_DFL if sigint else signal.SIG_IGN
    return subprocess.Popen(cmd, cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, handler),  # noqa: PLW1509  one thread
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(pytester.path),
                                                                              os.environ.get("PYTHONPATH", "")])})


@pytest.fixture
def project(pytester, monkeypatch):
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_mem=TESTS)
    leave_outer_run(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(OWNER_ENV, raising=False)
    return pytester


@pytest.mark.parametrize(("xdist", "sigint"), [(False, True), (True, False)],
                         ids=["serial", "xdist-controller-in-a-scripts-background"])
def test_a_killed_session_takes_its_measured_case_with_it(project, xdist, sigint):
    """Under xdist a worker whose controller's pipe closes interrupts its own main thread (execnet), which ends the
    case, unless SIGINT is ignored, as it is in a non-interactive shell's background job (`pytest -n 2 ... &` in a
    CI script): then only the owner watch ends it."""
    session = _start(project, *(["-n", "1"] if xdist else ["-p", "no:xdist"]), sigint=sigint)
    try:
        child, helper, server = _wait_for(project.path / "running.pids")
        worker = procfs.read_stat(server).ppid  # the forkserver's parent: the session, or its xdist worker
        session.kill()  # SIGKILL: no cleanup of the session's runs
        session.wait()
        left = left_after([child, helper, server] + ([worker] if xdist else []), 15)
    finally:
        if session.poll() is None:
            session.kill()
    assert not left, f"outlived the SIGKILLed session: {left}"


def test_a_helpers_case_ends_with_the_session_that_started_the_helper(project):
    project.makepyfile(driver=DRIVER)
    driver = subprocess.Popen([sys.executable, "driver.py"], cwd=project.path, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join([str(project.path),
                                                                                os.environ.get("PYTHONPATH", "")])})
    try:
        child, grandchild, _ = _wait_for(project.path / "running.pids")
        helper = int((project.path / "helper.pid").read_text())
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        left = left_after([helper, child, grandchild], 15)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert not left, f"outlived the SIGKILLed driver: {left}"
