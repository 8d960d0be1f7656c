"""lifecycle's owner watch: a process started by the gate ends, with what it started, once its owner is gone; and the
grace a command's descendants get to end on their own."""

import os
import subprocess
import sys
import time

import pytest

from gpu_budget.isolate import lifecycle
from gpu_budget.isolate.lifecycle import OWNER_ENV, OWNER_GONE
from gpu_budget.measure import procfs

WATCHER = '''
import subprocess, sys, time
from gpu_budget.isolate import lifecycle

lifecycle.adopt()
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(helper.pid, flush=True)
time.sleep(60)
'''


def _run_watcher(owner: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WATCHER], env={**os.environ, OWNER_ENV: owner}, capture_output=True,
                          text=True, timeout=30, check=False)


def test_an_owner_already_gone_ends_the_process_and_its_children_at_once():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    done = _run_watcher(f"{dead.pid}:1")
    assert done.returncode == OWNER_GONE, done.stderr
    assert f"{OWNER_ENV}={dead.pid}:1" in done.stderr, done.stderr  # says which owner, so a stale value is found
    assert all(procfs.read_stat(int(pid)) is None for pid in done.stdout.split())  # its helper, if started: gone


def test_a_reused_pid_is_not_the_owner():
    """The start time tells the owner apart from a later process given its pid."""
    me = lifecycle.owner_of(os.getpid())
    pid, start = me.split(":")
    done = _run_watcher(f"{pid}:{int(start) - 1}")
    assert done.returncode == OWNER_GONE, done.stderr


def test_a_live_owner_is_watched_and_the_watch_ends_nothing_while_it_lives():
    watcher = subprocess.Popen([sys.executable, "-c", WATCHER], env={**os.environ, OWNER_ENV: lifecycle.owner_of(
        os.getpid())}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    helper = None
    try:
        helper = watcher.stdout.readline().strip()
        assert helper.isdigit()  # adopted, started its helper, still running
        assert watcher.poll() is None
    finally:
        watcher.kill()
        watcher.wait()
        if helper and helper.isdigit():  # the watcher's own helper outlives a SIGKILLed watcher: the test ends it
            try:
                os.kill(int(helper), 9)
            except ProcessLookupError:
                pass


def test_a_bad_owner_value_is_an_error_naming_it():
    with pytest.raises(ValueError, match=r"GPU_BUDGET_OWNER='abc'"):
        lifecycle.end_with("abc")


def test_nothing_to_watch_for_no_owner_or_this_process():
    assert not lifecycle.end_with(None)
    assert not lifecycle.end_with(lifecycle.owner_of(os.getpid()))


def test_claim_names_this_process_and_release_restores(monkeypatch):
    monkeypatch.setenv(OWNER_ENV, "1:2")
    before = lifecycle.claim()
    assert before == "1:2"
    assert os.environ[OWNER_ENV] == lifecycle.owner_of(os.getpid())
    lifecycle.release(before)
    assert os.environ[OWNER_ENV] == "1:2"
    monkeypatch.delenv(OWNER_ENV)
    lifecycle.release(lifecycle.claim())
    assert OWNER_ENV not in os.environ


def test_running_tells_a_live_owner_from_a_gone_one():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    me = lifecycle.owner_of(os.getpid())
    assert lifecycle.running(me) and lifecycle.running(str(os.getpid()))
    assert not lifecycle.running(f"{dead.pid}:1")
    assert not lifecycle.running(me.split(":")[0] + ":1")  # this pid, another start: a reused pid
    with pytest.raises(ValueError, match=r"GPU_BUDGET_OWNER='x:1'"):
        lifecycle.running("x:1")


PARENT = '''
import subprocess, sys, time
helper = subprocess.Popen(["sleep", sys.argv[1]])
print(helper.pid, flush=True)
time.sleep(60)  # never reaps it: an ended helper stays a zombie, which is no longer running
'''


@pytest.mark.parametrize("helper_seconds,left", [("0.05", False), ("60", True)])
def test_await_descendants_gives_them_the_grace_and_names_those_still_running(helper_seconds, left):
    parent = subprocess.Popen([sys.executable, "-c", PARENT, helper_seconds], stdout=subprocess.PIPE, text=True)
    try:
        helper = int(parent.stdout.readline())
        waits: list[float] = []
        t0 = time.monotonic()
        still = lifecycle.await_descendants(parent.pid, 1.0, waits.append, interval=0.02)
        took = time.monotonic() - t0
        assert still == ([helper] if left else [])
        assert (took >= 1.0) if left else (took < 0.9), took  # the whole grace only for one that stays
        assert waits and max(waits) <= 0.02
    finally:
        lifecycle.kill_descendants(parent.pid)  # while it lives: its orphan would re-parent away
        parent.kill()
        parent.wait()


def test_sigterm_interrupts_a_session_and_is_handed_back_and_a_handler_of_someone_else_s_is_kept():
    import signal

    before = lifecycle.interrupt_on_sigterm()
    try:
        assert before is signal.SIG_DFL
        with pytest.raises(KeyboardInterrupt, match="ended by SIGTERM"):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)  # the handler runs between bytecodes, well before this ends
    finally:
        lifecycle.restore_sigterm(before)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL

    def theirs(signum, frame):
        pass

    signal.signal(signal.SIGTERM, theirs)
    try:
        assert lifecycle.interrupt_on_sigterm() is None
        assert signal.getsignal(signal.SIGTERM) is theirs
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
