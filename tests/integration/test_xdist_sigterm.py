"""SIGTERM to the controller alone (a CI job's timeout, a plain `kill PID`) ends a `-n 2` gate at once, as Ctrl-C does.

Ctrl-C in a terminal reaches every process of the session's group; a SIGTERM sent to the pytest process reaches
the controller only, while each worker goes on measuring its case. xdist then waits out its shutdown (execnet
interrupts a busy worker after 5 s, xdist kills it after 10 s): the session took 11 s to end. The controller now
passes the SIGTERM on to its workers, which end their measured children as a serial session does.
"""

import os
import signal
import subprocess
import sys
import time

from inner_session import alive, leave_outer_run

RUNNERS = '''
import os, pathlib, time


def sleeps(ctx):
    pathlib.Path(f"child-{ctx.params['n']}.pid").write_text(str(os.getpid()))
    with ctx.meter.phase("train_step_1", step=1):
        time.sleep(120)
'''

TESTS = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.parametrize("n", [0, 1])
@pytest.mark.gpu_budget(ram="1 GiB")
def test_sleeps(gpu_budget, n):
    gpu_budget.measure(Scenario(name="slow", run="runners:sleeps", params={"n": n}))
'''


def test_sigterm_to_the_controller_ends_its_workers_cases_at_once(pytester, monkeypatch):
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_mem=TESTS)
    leave_outer_run(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    session = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-n",
                                "2", "--gpu-budget", "-q"], cwd=pytester.path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    pids = [pytester.path / f"child-{n}.pid" for n in (0, 1)]
    try:
        deadline = time.monotonic() + 120
        while not all(p.exists() and p.read_text() for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        children = [int(p.read_text()) for p in pids]
        started = time.monotonic()
        os.kill(session.pid, signal.SIGTERM)  # the controller alone, not its process group
        code = session.wait(timeout=60)
        took = time.monotonic() - started
    finally:
        if session.poll() is None:
            session.kill()
    assert code == 2, code  # pytest's "interrupted"
    assert took < 6, f"the session took {took:.1f} s to end"  # before: 11 s, xdist's shutdown waited out
    assert not [pid for pid in children if alive(pid)], "a measured child outlived the terminated session"
