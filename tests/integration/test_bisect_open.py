"""`python -m gpu_budget bisect` where skips leave the answer open, in a real git repository: the skipped commit's
reason is its error, and the answer is the commits it could be, with the summary, the JSON report and exit code 1."""

import json
import re
import subprocess
import sys

from git_project import CASE, RUNNERS, commit, git, start_repo

CONFTEST = "import os\n\ndef broken(:\n    pass\n"  # a syntax error at line 3: no session runs at that commit


def test_an_answer_left_open_by_skips_exits_1_with_the_summary_and_the_json(pytester, monkeypatch):
    """GOOD holds 8 MiB; commit 1 holds 72 MiB and breaks conftest.py (a skip); commit 2 (BAD) fixes conftest.py. The
    first commit past the tolerance is commit 1 or commit 2: skips leave it open. Before: exit 2, "git bisect run
    failed" and git's transcript, no summary, no JSON, and the skip's reason cut at "its output ends:"."""
    start_repo(pytester, monkeypatch, {"test_mem.py": CASE, "runners.py": RUNNERS.format(mib=8)})
    commit(pytester.path, "good")
    (pytester.path / "runners.py").write_text(RUNNERS.format(mib=72))
    (pytester.path / "conftest.py").write_text(CONFTEST)
    first = commit(pytester.path, "commit 1: hold 72 MiB, break conftest.py")
    (pytester.path / "conftest.py").unlink()
    bad = commit(pytester.path, "commit 2: fix conftest.py")
    done = subprocess.run([sys.executable, "-m", "gpu_budget", "bisect", "main~2", "main", "-k", "test_fn", "--json",
                           "bisect.json"], check=False, cwd=pytester.path, capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "git bisect run failed" not in out + done.stderr
    assert "gpu-budget bisect: commits measured, in the order tried:" in out, out
    assert (f"gpu-budget bisect: no single first commit: skipped commits leave it open: the first commit past the "
            f"tolerance is one of 2: {first[:10]} commit 1: hold 72 MiB, break conftest.py (skip), {bad[:10]} commit 2: "
            f"fix conftest.py (BAD as given)") in out, out
    found = json.loads((pytester.path / "bisect.json").read_text())
    assert found["first"] is None and found["candidates"] == [first, bad]
    assert found["reference"]["outcome"] == "reference" and found["reference"]["value"] > 8 << 20
    (skipped,) = found["tried"]
    assert (skipped["commit"], skipped["outcome"]) == (first, "skip")
    assert re.search(r'File "conftest.py", line 3 \| def broken\(: \| SyntaxError: [^|]+$', skipped["why"]), skipped
    assert skipped["why"] in out  # the summary line carries it too
    assert not (pytester.path / ".git" / "BISECT_LOG").exists()
    assert git(pytester.path, "worktree", "list", "--porcelain").count("worktree ") == 1
