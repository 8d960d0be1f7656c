"""`python -m gpu_budget bisect` given the case as an absolute node id (`-k $PWD/test_mem.py::test_fn`): each commit's
session runs the worktree's file, not the working tree's."""

import json
import subprocess
import sys

from git_project import CASE, RUNNERS, commit, start_repo


def test_an_absolute_node_id_is_the_commits_file(pytester, monkeypatch):
    """Before: the path named the working tree's test_mem.py, whose folder pytest put first on sys.path, so GOOD and
    BAD alike measured the working tree's 72 MiB: "no single first commit: BAD main (...) is within the tolerance of
    GOOD", exit 1."""
    top = start_repo(pytester, monkeypatch, {"test_mem.py": CASE, "runners.py": RUNNERS.format(mib=8)})
    commit(top, "8 MiB")
    (top / "runners.py").write_text(RUNNERS.format(mib=72))
    bad = commit(top, "72 MiB")
    done = subprocess.run([sys.executable, "-m", "gpu_budget", "bisect", "main~1", "main", "-k",
                           f"{top}/test_mem.py::test_fn", "--json", "bisect.json"], check=False, cwd=top,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((top / "bisect.json").read_text())["first"] == bad, done.stdout
