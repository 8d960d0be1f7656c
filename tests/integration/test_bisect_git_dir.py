"""`python -m gpu_budget bisect` run where git's GIT_DIR is exported (a git hook exports it, and GIT_WORK_TREE): the
bisect's git commands and sessions run in its worktree, found from their folder, not in the user's repository."""

import json
import subprocess
import sys

from git_project import CASE, RUNNERS, commit, git, start_repo


def test_a_bisect_under_an_exported_git_dir_finds_the_commit_and_leaves_the_checkout_alone(pytester, monkeypatch):
    """Before: `git bisect start` ran on the user's repository, the worktree taken for its working tree: "bisect: git
    bisect start main main~2 failed: You need to run this command from the toplevel of the working tree.", exit 2."""
    top = start_repo(pytester, monkeypatch, {"test_mem.py": CASE})
    for n, mib in enumerate((8, 8, 72)):
        (top / "runners.py").write_text(RUNNERS.format(mib=mib) + f"# commit {n}\n")
        bad = commit(top, f"commit {n}: {mib} MiB")
    monkeypatch.setenv("GIT_DIR", str(top / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(top))
    done = subprocess.run([sys.executable, "-m", "gpu_budget", "bisect", "main~2", "main", "-k", "test_fn", "--json",
                           "bisect.json"], check=False, cwd=top, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((top / "bisect.json").read_text())["first"] == bad, done.stdout
    assert git(top, "rev-parse", "--abbrev-ref", "HEAD") == "main" and git(top, "status", "--porcelain") == ""
    assert not (top / ".git" / "BISECT_LOG").exists()
