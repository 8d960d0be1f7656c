"""A case in another environment's helper: what its child prints on stdout stays out of the helper's answers.

The helper answers one JSON line per request on its stdout; the children its
forkserver forks inherit the helper's descriptors, so a runner's print (the HF
Trainer prints its metrics dict at the end of train()) must not reach that
channel, or an answer is garbled and every later answer goes to the wrong
request.
"""

import sys

import pytest

from gpu_budget.declare.scenario import Scenario
from gpu_budget.isolate import forkserver
from gpu_budget.isolate.remote import Remote, RemoteFailed

RUNNER = '''
import sys

import pytest

def run(ctx):
    n = ctx.params["n"]
    print({"train_runtime": "1.0", "n": n})  # not JSON: what the Trainer prints
    print('{"measurement": "not this one"}')  # JSON, and a key an answer holds
    sys.stdout.flush()
    return {"n": n}
'''


def test_a_child_that_prints_on_stdout_leaves_each_answer_to_its_request(tmp_path):
    (tmp_path / "printing.py").write_text(RUNNER)
    remote = Remote(sys.executable, [str(tmp_path), *forkserver.child_paths()])
    try:
        for n in range(3):
            job = Scenario(name="printing", run="printing:run", params={"n": n}).to_json("tiny")
            measured = remote.measure(job, tmp_path / "assets", 120, threads=1, preload=())
            assert measured.ok and measured.info["n"] == n, measured
    finally:
        remote.close()


def test_a_closed_helper_leaves_no_pipe_open(tmp_path):
    """close() ends the helper and closes both pipes to it: a pipe left to the collector is a ResourceWarning,
    which a project's `filterwarnings = ["error"]` turns into a traceback and exit status 1 after a passing run."""
    remote = Remote(sys.executable, [str(tmp_path), *forkserver.child_paths()])
    remote.close()
    assert remote.proc.returncode is not None
    assert (remote.proc.stdin.closed, remote.proc.stdout.closed, remote.stderr.closed) == (True, True, True)


def test_a_helper_that_died_is_told_with_its_own_last_words(tmp_path):
    """The cases' output goes to the session's descriptors; the helper's own traceback stays in its temporary file,
    read into the message of the case that found it dead."""
    remote = Remote(sys.executable, [str(tmp_path), *forkserver.child_paths()])
    try:
        remote.proc.stdin.write("not a request\n")
        remote.proc.stdin.flush()
        job = Scenario(name="printing", run="printing:run", params={"n": 0}).to_json("tiny")
        with pytest.raises(RemoteFailed, match=r"(?s)exited with 1:.*JSONDecodeError"):
            remote.measure(job, tmp_path / "assets", 120, threads=1, preload=())
    finally:
        remote.close()
