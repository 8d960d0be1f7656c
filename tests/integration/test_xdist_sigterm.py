"""SIGTERM or SIGINT to the controller alone (a CI job's timeout, `kill PID`, `kill -INT PID`) ends a `-n 2` gate at
once, as Ctrl-C in a terminal does.

Ctrl-C in a terminal reaches every process of the session's group; a signal sent to the pytest process reaches
the controller only, while each worker goes on measuring its case. xdist then waits out its shutdown (execnet
interrupts a busy worker after 5 s, xdist kills it after 10 s): the session took 11 s to end. The controller now
passes the signal on to its workers as a SIGTERM, and they end their measured children as a serial session does; a
worker still starting up, not yet ready, gets it too.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
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


QUICK_RUNNER = '''


def quick(ctx):
    with ctx.meter.phase("load"):
        held = b"\\x01" * (8 << 20)
    return {"held": len(held)}
'''

BOTH = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.parametrize("case", ["quick-0", "slow-0", "quick-1", "slow-1"])  # worksteal: one of each per worker
@pytest.mark.gpu_budget(ram="1 GiB")
def test_case(gpu_budget, case):
    kind, n = case.split("-")
    gpu_budget.measure(Scenario(name=kind, run="runners:" + ("sleeps" if kind == "slow" else "quick"),
                                params={"n": int(n)}))
'''


def _traced_controller(path, traces, *args: str) -> subprocess.Popen:
    """A `-n 2` gate session in `path`, execnet tracing into `traces` (a short path: the gate's sockets go there too),
    in a group of its own with SIGINT at its default (a background job's SIG_IGN would hide it)."""
    return subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "2",
                             "--gpu-budget", "-q", *args], cwd=path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, "EXECNET_DEBUG": "1", "TMPDIR": str(traces)},
                            start_new_session=True,  # its own group: nothing else sends it a SIGINT
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509  no threads


def test_sigint_to_the_controller_alone_ends_its_workers_cases_without_waiting_out_xdist(pytester, monkeypatch,
                                                                                            tmp_path_factory):
    """`kill -INT PID` (a runner's cancel that signals the one process) reaches the controller only. Before, each
    worker measured on until xdist's shutdown asked it to end and execnet, after waiting 5 s for the busy worker,
    sent it a SIGINT of its own (its trace: "execution ongoing after 5 secs, trying interrupt_main"); the session took
    6-8 s to end here. Now the controller passes the interrupt on as it does a SIGTERM. A worker interrupted mid-case
    never ships its data: the gate fails saying so, and no baseline file is written half."""
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS + QUICK_RUNNER, test_mem=BOTH)
    leave_outer_run(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    traces = tmp_path_factory.mktemp("x", numbered=True)  # execnet's trace files (EXECNET_DEBUG=1: one per process,
    # in the temp folder), a short path: the gate's Unix sockets go there too
    session = _traced_controller(pytester.path, traces, "--gpu-budget-json=r.json", "--gpu-budget-baselines=bl")
    pids = [pytester.path / f"child-{n}.pid" for n in (0, 1)]
    try:
        deadline = time.monotonic() + 120
        while not all(p.exists() and p.read_text() for p in pids) and time.monotonic() < deadline:
            assert session.poll() is None, session.communicate()[0][-3000:]
            time.sleep(0.1)
        children = [int(p.read_text()) for p in pids]
        os.kill(session.pid, signal.SIGINT)  # the controller alone, not its process group
        out, _ = session.communicate(timeout=60)  # ended at all (xdist kills a worker after 10 s)
    finally:
        if session.poll() is None:
            session.kill()
    assert session.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert not [pid for pid in children if alive(pid)], "a measured child outlived the interrupted session"
    waited = [line for f in traces.glob("execnet-debug-*") for line in f.read_text().splitlines() if "ongoing" in line]
    assert not waited, f"a worker was left to execnet's shutdown: {waited}"
    report = json.loads((pytester.path / "r.json").read_text())
    assert sorted(r["nodeid"].split("::")[1] for r in report["results"]) == ["test_case[quick-0]", "test_case[quick-1]"]
    assert any("did not finish (interrupted, or it crashed)" in p for p in report["gate_problems"]), report
    for path in (pytester.path / "bl").rglob("*"):
        assert path.is_dir() or json.loads(path.read_text()), f"{path}: a baseline file not whole"


SLOW_START = '''
import os, pathlib, time

import pytest


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which tells the controller the worker is ready
def pytest_sessionstart(session):
    """A worker slow to start (a conftest importing a framework, a large collection): it waits, not ready yet."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        pathlib.Path(f"starting-{worker}.pid").write_text(str(os.getpid()))
        time.sleep(60)
'''


def test_sigint_to_the_controller_before_its_workers_are_ready_ends_them_at_once(pytester, monkeypatch,
                                                                                 tmp_path_factory):
    """`kill -INT PID` while the workers still start up. The controller knew a worker's pid only once the worker said
    it was ready, so it passed the interrupt on to none: xdist's shutdown asked each to end, execnet waited 5 s for it
    and then interrupted it ("execution ongoing after 5 secs, trying interrupt_main"), and the session took 7.4 s to
    end here. The controller now knows each worker's pid as xdist sets the worker up: 1.7-2.5 s."""
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=QUICK_RUNNER, conftest=SLOW_START, test_mem=TESTS.replace("sleeps", "quick"))
    leave_outer_run(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    traces = tmp_path_factory.mktemp("x", numbered=True)  # execnet's trace files, a short path (the gate's sockets)
    session = _traced_controller(pytester.path, traces)
    marks = [pytester.path / f"starting-gw{n}.pid" for n in (0, 1)]
    try:
        deadline = time.monotonic() + 120
        while not all(p.exists() and p.read_text() for p in marks) and time.monotonic() < deadline:
            assert session.poll() is None, session.communicate()[0][-3000:]
            time.sleep(0.05)
        workers = [int(p.read_text()) for p in marks]
        started = time.monotonic()
        os.kill(session.pid, signal.SIGINT)  # the controller alone, not its process group
        out, _ = session.communicate(timeout=60)
        took = time.monotonic() - started
    finally:
        if session.poll() is None:
            session.kill()
    assert session.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    waited = [line for f in traces.glob("execnet-debug-*") for line in f.read_text().splitlines() if "ongoing" in line]
    assert not waited, f"a worker was left to execnet's shutdown: {waited}"
    assert took < 5, f"the session took {took:.1f} s to end"  # before: 7.4 s
    assert not [pid for pid in workers if alive(pid)], "a worker outlived the interrupted session"
