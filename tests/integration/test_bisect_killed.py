"""`python -m gpu_budget bisect` killed (SIGKILL: the OOM killer, a runner's hard stop) or hung up on (SIGHUP: the
terminal closed) while `git bisect run` measures a commit: nothing of it may go on measuring.

Each step `git bisect run` starts watches the bisect that started it and ends its session with it
(lifecycle.end_with). Before, the watch printed its notice to a stderr piped to the bisect that was gone, died of the
BrokenPipeError and ended nothing: the commit's session ran on, and `git bisect run` went on to the next commit, with
no one to read it, in a worktree no one would remove until the next run. A SIGHUP ended the bisect at once, its
worktree left."""

import os
import signal
import subprocess
import sys
import time

import pytest
from git_project import CASE, commit, git, start_repo
from inner_session import left_after

SLEEPER = '''import os, time


def run(ctx):
    held = b'\\x01' * (8 << 20)
    if os.path.exists("SLEEP"):  # a commit from the second on: it sleeps, its pid written
        with open(os.environ["PIDS"], "a") as fh:
            fh.write(f"{os.getpid()}\\n")
        time.sleep(120)
    return {}
'''


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGHUP], ids=["sigkill", "sighup"])
def test_a_bisect_ended_while_a_commit_measures_leaves_nothing_running(pytester, monkeypatch, tmp_path_factory, sig):
    start_repo(pytester, monkeypatch, {"test_mem.py": CASE, "runners.py": SLEEPER})
    commit(pytester.path, "good")
    (pytester.path / "SLEEP").write_text("")
    for k in range(1, 4):
        (pytester.path / "README").write_text(f"{k}\n")
        commit(pytester.path, f"commit {k}")
    tmp_path = tmp_path_factory.mktemp("bk")  # TMPDIR: short, as a Unix socket's path under it must be
    pids = tmp_path / "pids.txt"
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    driver = subprocess.Popen([sys.executable, "-m", "gpu_budget", "bisect", "main~3", "main", "-k", "test_fn"],
                              cwd=pytester.path, env={**os.environ, "PIDS": str(pids)}, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (pids.exists() and pids.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pids.exists(), "no commit's measured child started"
        os.killpg(driver.pid, sig)  # the driver's group: as a terminal hangs up on its foreground job
        out, _ = driver.communicate(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
    child = int(pids.read_text().split()[0])
    assert not left_after([child], 15), f"the measured child {child} of the commit tried outlived the bisect:\n{out}"
    deadline = time.monotonic() + 15
    while _bisect_run(tmp_path) and time.monotonic() < deadline:  # the step ended: git bisect run aborts on its 255
        time.sleep(0.1)
    assert not _bisect_run(tmp_path), "git bisect run went on after the bisect that started it was gone"
    if sig == signal.SIGHUP:  # ended as a SIGTERM is: the worktree removed by the bisect itself
        assert "interrupted: its processes were ended and the worktree removed" in out, out
        assert git(pytester.path, "worktree", "list", "--porcelain").count("worktree ") == 1
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith("gpu-budget-against-")] == []


def _bisect_run(under) -> list[int]:
    """The processes of a `git bisect run` (git, its shell, the step) working in a folder under `under`."""
    found = subprocess.run(["pgrep", "-f", "gpu_budget.against.bisect"], check=False, capture_output=True,
                           text=True).stdout.split()
    return [int(p) for p in found if _cwd(int(p)).startswith(str(under))]


def _cwd(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""
