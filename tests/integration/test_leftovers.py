"""Nothing a measured run starts outlives it: what the child leaves in its process group is ended with it."""

import time

import pytest
from inner_session import alive, left_after, rows

RUNNERS = '''
import os, signal, time
import multiprocessing as mp


def _wait_forever(conn):
    conn.recv()  # never answered: an orphan that would wait until the machine reboots


def leaves_a_worker(ctx):
    here, there = mp.get_context("fork").Pipe()
    worker = mp.get_context("fork").Process(target=_wait_forever, args=(there,), daemon=False)
    worker.start()
    with open("worker.pid", "w") as fh:
        fh.write(str(worker.pid))
    with ctx.meter.phase("train_step_1", step=1):
        pass
    if ctx.params.get("kill"):
        os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer would: the worker is orphaned
    os._exit(0)  # ends without joining it (multiprocessing would wait for a non-daemon worker)


def leaves_a_daemon(ctx):
    import subprocess, sys
    with ctx.meter.phase("train_step_1", step=1):
        daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    with open("daemon.pid", "w") as fh:
        fh.write(str(daemon.pid))
    if ctx.params.get("kill"):
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would: the child's own cleanup never runs
    if ctx.params.get("exit"):
        os._exit(0)  # nor here
'''

TESTS = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.parametrize("kill", [False, True])
@pytest.mark.gpu_budget(ram="8 GiB")
def test_leaves(gpu_budget, kill):
    gpu_budget.measure(Scenario(name="w", run="runners:leaves_a_worker", params={"kill": kill}))
'''


def test_a_worker_left_behind_is_ended_with_its_measured_child(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_mem=TESTS)
    pids = []
    for kill in ("False", "True"):
        pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget", "-k", kill)
        pids.append(int((pytester.path / "worker.pid").read_text()))
    assert not left_after(pids, 5), "a measured child's worker outlived it"


def test_a_daemon_in_a_session_of_its_own_is_ended_with_its_measured_child(pytester, monkeypatch):
    """Out of the child's process group, so a group kill misses it; the child ends its descendants as it ends."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_mem=TESTS.replace("leaves_a_worker", "leaves_a_daemon"))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget", "-k", "False")
    pid = int((pytester.path / "daemon.pid").read_text())
    assert not left_after([pid], 5), "a daemon the measured run started outlived it"
    result.assert_outcomes(passed=1, deselected=1)  # a run(ctx)'s leftovers are killed, not a failure (measuring.md)


def test_a_daemon_in_a_session_of_its_own_is_ended_when_its_measured_child_dies_first(pytester, monkeypatch):
    """SIGKILLed (the kernel's OOM killer) or gone by os._exit, the child ends nothing itself, and its daemon re-parents
    away from it and out of its process group: the forkserver, a subreaper, adopts it, and the session ends it."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_mem=TESTS.replace("leaves_a_worker", "leaves_a_daemon").replace(
        '"kill": kill', '"kill": kill, "exit": not kill'))
    pids = []
    for kill in ("False", "True"):
        result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget", "-k", kill)
        result.assert_outcomes(failed=1)  # the child ended without a result: a failure, and the session goes on
        pids.append(int((pytester.path / "daemon.pid").read_text()))
    assert not left_after(pids, 5), "a daemon outlived the measured child that died before ending it"


SLEEPS = '''
import os, time


def sleeps(ctx):
    with open("child.pid", "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(120)
'''


def measuring_child(folder) -> int:
    """The measured child's pid, once SLEEPS's runner has written it to child.pid (within a minute)."""
    started = folder / "child.pid"
    deadline = time.monotonic() + 60
    while not (started.exists() and started.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return int(started.read_text())


COMMAND_TESTS = '''
import sys
import pytest
from gpu_budget import Scenario

SLEEPS = "import os, time; open('child.pid', 'w').write(str(os.getpid())); time.sleep(120)"


@pytest.mark.gpu_budget(ram="8 GiB")
def test_sleeps(gpu_budget):
    gpu_budget.measure(Scenario(name="c", command=[sys.executable, "-c", SLEEPS]))
'''


SECOND_SIGNAL = '''
import os
from gpu_budget.isolate import forkserver

_end_tree = forkserver._end_tree


def _end_tree_interrupted(pid):
    """A second signal as the interrupted child is being ended (Ctrl-C pressed twice, a CI job's SIGTERM after its
    SIGINT), at the moment it would cut the ending short."""
    forkserver._end_tree = _end_tree  # once
    os.kill(os.getpid(), int(os.environ["SECOND_SIGNAL"]))
    _end_tree(pid)


forkserver._end_tree = _end_tree_interrupted
'''


def interrupted(pytester, monkeypatch, sig: int, case: str, second: int | None = None) -> tuple[int, int, list[str]]:
    """Run a session whose one case sleeps (a runner, or a command), send it `sig` once the case runs (and `second`
    as it ends the child); (the session's exit code, the pid of the process that wrote child.pid, what was left in
    its TMPDIR)."""
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    monkeypatch.delenv("CI", raising=False)
    tmp = Path(tempfile.mkdtemp(prefix="gb-term-", dir="/tmp"))  # short: multiprocessing's socket lives in it
    monkeypatch.setenv("TMPDIR", str(tmp))
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    if second is not None:
        monkeypatch.setenv("SECOND_SIGNAL", str(int(second)))
        pytester.makeconftest(SECOND_SIGNAL)
    if case == "command":
        pytester.makepyfile(test_mem=COMMAND_TESTS)
    else:
        pytester.makepyfile(runners=SLEEPS, test_mem=TESTS.replace("leaves_a_worker", "sleeps"))
    session = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:xdist", "--gpu-budget",
                                "-p", "no:cacheprovider", "--basetemp", str(pytester.path / "base"), "-k", "not True"],
                               cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        child = measuring_child(pytester.path)
        assert list(tmp.glob("gpu-budget-events-*/events.jsonl"))  # the child's event file, while it runs
        session.send_signal(sig)
        code = session.wait(timeout=20)  # not the child's 120 s
    finally:
        if session.poll() is None:
            session.kill()
        left = sorted(p.name for p in tmp.iterdir())
        shutil.rmtree(tmp)
    return code, child, left


@pytest.mark.parametrize("case", ["runner", "command"])
def test_ctrl_c_ends_the_measured_child_with_the_session_leaving_no_temp_file(pytester, monkeypatch, case):
    """Interrupted while a child measures, the session ends it at once (multiprocessing would join it at exit), and
    removes its temp files: the child's event folder (gpu-budget-events-*), a command's socket folder
    (gpu-budget-sock-*)."""
    import signal

    code, child, left = interrupted(pytester, monkeypatch, signal.SIGINT, case)
    assert code == 2, code  # pytest's "interrupted"
    assert not alive(child), "the measured process outlived the interrupted session"
    assert left == []


@pytest.mark.parametrize("case", ["runner", "command"])
def test_sigterm_ends_the_session_as_ctrl_c_does_leaving_no_temp_file(pytester, monkeypatch, case):
    """A CI job's timeout sends SIGTERM: the measured child is ended and the session's temp files (the child's event
    file, multiprocessing's folder, a command's socket folder) are removed, as on Ctrl-C; by default Python would die
    at once, leaving them."""
    import signal

    code, child, left = interrupted(pytester, monkeypatch, signal.SIGTERM, case)
    assert code == 2, code  # pytest's "interrupted"
    assert not alive(child), "the measured process outlived the terminated session"
    assert left == []


@pytest.mark.parametrize("second", ["SIGTERM", "SIGINT"])
def test_a_second_signal_as_the_child_is_ended_lets_the_session_end(pytester, monkeypatch, second):
    """A CI job's cancel sends SIGINT, then SIGTERM; a user may press Ctrl-C twice. Before, the second signal, coming
    as the interrupted child was being ended, cut that short: the child was left running unreaped, and the session
    hung in multiprocessing's exit waiting for it. It now ends as on one Ctrl-C."""
    import signal

    code, child, left = interrupted(pytester, monkeypatch, signal.SIGINT, "runner", getattr(signal, second))
    assert code == 2, code  # pytest's "interrupted", not a session that hangs or dies of its signal
    assert not alive(child), "the measured process outlived the interrupted session"
    assert left == []


THREADS = '''
import threading, time


def leaves_a_thread(ctx):
    with ctx.meter.phase("train_step_1", step=1):
        threading.Thread(target=time.sleep, args=(300,)).start()  # not a daemon, never joined
    return {"returned": True}


def prepare_leaves_a_thread(ctx):
    threading.Thread(target=time.sleep, args=(300,)).start()
    (ctx.assets / "model.bin").write_bytes(b"1")


def reads_assets(ctx):
    with ctx.meter.phase("train_step_1", step=1):
        assert (ctx.assets / "model.bin").exists()
'''

THREAD_TESTS = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="8 GiB")
def test_run(gpu_budget):
    gpu_budget.measure(Scenario(name="run", run="runners:leaves_a_thread"))


@pytest.mark.gpu_budget(ram="8 GiB")
def test_prepare(gpu_budget):
    gpu_budget.measure(Scenario(name="prep", prepare="runners:prepare_leaves_a_thread", run="runners:reads_assets"))
'''


def test_a_thread_the_run_leaves_running_does_not_hold_its_child_until_the_timeout(pytester, monkeypatch):
    """A non-daemon thread left running (an executor's worker never shut down) would hold the child in
    multiprocessing's exit, which joins it: the finished case would wait for --gpu-budget-timeout, and pass then."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=THREADS, test_mem=THREAD_TESTS)
    started = time.monotonic()
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget",
                                           "--gpu-budget-timeout=30", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=2)
    assert time.monotonic() - started < 25, "a finished run waited for the thread it left, until its timeout"
    (run, _) = sorted(rows(pytester).values(), key=lambda r: r["nodeid"], reverse=True)
    assert run["wall_seconds"] < 10
    assert run["info"]["returned"] is True


STOPPED_AND_DAEMON = '''
import os, signal, subprocess, sys, time


def stops_one_and_daemonises_one(ctx):
    stopped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])  # in the child's own group
    os.kill(stopped.pid, signal.SIGSTOP)  # as a job-control stop or a debugger leaves it
    daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    for name, pid in (("stopped.pid", stopped.pid), ("daemon.pid", daemon.pid), ("child.pid", os.getpid())):
        with open(name + ".tmp", "w") as fh:
            fh.write(str(pid))
        os.replace(name + ".tmp", name)
    time.sleep(120)
'''


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL", "SIGHUP"])
def test_a_group_signal_ends_a_daemon_of_a_child_whose_group_holds_a_stopped_process(pytester, monkeypatch, sig):
    """A CI job's cancel (SIGTERM) or hard stop (SIGKILL), or a terminal's hangup (SIGHUP), reaches the session's whole
    process group, the forkserver with it. The forkserver gone, the measured child's own group is orphaned, and where
    it holds a stopped process the kernel sends that group SIGHUP: the child died of it at once, ending nothing, and
    its daemon (in a session of its own) ran on under init."""
    import os
    import signal
    import subprocess
    import sys

    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=STOPPED_AND_DAEMON,
                        test_mem=TESTS.replace("leaves_a_worker", "stops_one_and_daemonises_one"))
    session = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:xdist", "--gpu-budget",
                                "-p", "no:cacheprovider", "-k", "not True"], cwd=pytester.path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, process_group=0)
    try:
        measuring_child(pytester.path)
        daemon, stopped = (int((pytester.path / name).read_text()) for name in ("daemon.pid", "stopped.pid"))
        os.killpg(session.pid, getattr(signal, sig))
        code = session.wait(timeout=30)
    finally:
        if session.poll() is None:
            session.kill()
    left = left_after([daemon, stopped], 5)
    for pid in left:  # this test's own leftovers: not left to the machine
        os.kill(pid, signal.SIGKILL)
    assert code == (2 if sig == "SIGTERM" else -getattr(signal, sig)), code  # pytest's "interrupted", or killed
    assert not left, "a daemon outlived the measured child that its group's SIGHUP killed"
