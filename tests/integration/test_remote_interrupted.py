"""A request to another environment's helper cut off (a Ctrl-C sent to pytest alone, a plugin's timeout raised in
the main thread): the helper is mid-case, so it is ended at once with the case it runs, instead of the session
waiting on the case to finish before it can stop, and a later request gets its own answer from a helper started
anew, never the one the cut-off request left in the pipe."""

import os
import signal
import sys
import time

import pytest
from inner_session import left_after

from gpu_budget.declare.scenario import Scenario
from gpu_budget.isolate import forkserver
from gpu_budget.isolate.remote import Remote

RUNNER = '''
import os, time

def run(ctx):
    with open(os.environ["GB_TEST_PIDS"], "a") as fh:
        fh.write(f"{os.getpid()}\\n")
    time.sleep(ctx.params["sleep"])
    return {"sleep": ctx.params["sleep"]}
'''


def interrupted_after(seconds: float):
    def handler(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    return previous


def test_an_interrupted_request_ends_the_helper_and_its_case_at_once(tmp_path, monkeypatch):
    (tmp_path / "sleeper.py").write_text(RUNNER)
    pids = tmp_path / "pids.txt"
    monkeypatch.setenv("GB_TEST_PIDS", str(pids))
    remote = Remote(sys.executable, [str(tmp_path), *forkserver.child_paths()])
    job = Scenario(name="sleeper", run="sleeper:run", params={"sleep": 60}).to_json("tiny")
    previous = interrupted_after(3)
    try:
        with pytest.raises(KeyboardInterrupt):
            remote.measure(job, tmp_path / "assets", 120, threads=1, preload=())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    t0 = time.monotonic()
    remote.close()
    assert time.monotonic() - t0 < 5, "close() waited on the case the interrupted request runs"
    assert remote.proc.returncode is not None
    child = int(pids.read_text().split()[0])
    if left_after([child], 5):
        os.kill(child, signal.SIGKILL)
        pytest.fail("the case the interrupted request ran was left running")


def test_the_next_request_after_an_interrupted_one_gets_its_own_answer(tmp_path, monkeypatch):
    from gpu_budget.model.result import EnvironmentRecord
    from gpu_budget.session.environments import Environments

    (tmp_path / "sleeper.py").write_text(RUNNER)
    monkeypatch.setenv("GB_TEST_PIDS", str(tmp_path / "pids.txt"))
    monkeypatch.syspath_prepend(str(tmp_path))
    environments = Environments(lambda: tmp_path / "envs", lambda record: None)
    made = EnvironmentRecord((), {}, {}, "", "uv", 0.0, True, sys.executable)
    first = environments.remote(made)
    previous = interrupted_after(3)
    try:
        with pytest.raises(KeyboardInterrupt):
            first.measure(Scenario(name="sleeper", run="sleeper:run", params={"sleep": 5}).to_json("tiny"),
                          tmp_path / "assets", 120, threads=1, preload=())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    try:
        measured = environments.remote(made).measure(Scenario(name="sleeper", run="sleeper:run", params={"sleep": 0}).to_json("tiny"),
                                 tmp_path / "assets", 120, threads=1, preload=())
        assert measured.ok and measured.info["sleep"] == 0, measured  # not the cut-off request's answer (5)
    finally:
        environments.close()
