"""`python -m gpu_budget bisect` over a history in which the case's test file is renamed: the case is the same one at
each commit (git's rename detection since GOOD, as --against pairs a renamed file), not "not collected here"."""

import json
import subprocess
import sys

import pytest
from git_project import CASE, RUNNERS, commit, git, start_repo


@pytest.mark.parametrize("case", ["test_fn", "test_a.py::test_fn"])
def test_a_case_whose_file_is_renamed_is_bisected_across_the_rename(pytester, monkeypatch, case):
    """GOOD holds 8 MiB in test_a.py; commit 1 renames it test_b.py; commit 2 holds 72 MiB; commit 3 (BAD) touches a
    README. Before: every commit after the rename was a skip ("the case is not collected here"), exit 1, open."""
    start_repo(pytester, monkeypatch, {"test_a.py": CASE, "runners.py": RUNNERS.format(mib=8)})
    commit(pytester.path, "good")
    git(pytester.path, "mv", "test_a.py", "test_b.py")
    commit(pytester.path, "commit 1: rename test_a.py to test_b.py")
    _bisect_a_growth_after_the_rename(pytester, case)


def test_a_case_whose_file_is_rewritten_past_gits_rename_detection_is_followed_by_its_name(pytester, monkeypatch):
    """Commit 1 rewrites test_a.py as test_b.py with heavy edits (git: a deletion and an addition); commit 2 holds
    72 MiB. The case is the one case of its name at each commit, as --against pairs it. Before: every commit after the
    rewrite was a skip, BAD could not be measured, no commit named."""
    start_repo(pytester, monkeypatch, {"test_a.py": CASE, "runners.py": RUNNERS.format(mib=8)})
    commit(pytester.path, "good")
    (pytester.path / "test_a.py").unlink()
    notes = "".join(f"# a note of the rewrite, line {k}: what the case below measures and why\n" for k in range(30))
    (pytester.path / "test_b.py").write_text(notes + CASE)
    commit(pytester.path, "commit 1: rewrite test_a.py as test_b.py")
    assert git(pytester.path, "diff", "-M", "--name-status", "main~1").split() == ["D", "test_a.py", "A", "test_b.py"]
    tried = _bisect_a_growth_after_the_rename(pytester, "test_fn")
    assert any("as test_b.py::test_fn, paired by the case's name" in t["why"] for t in tried), tried


def _bisect_a_growth_after_the_rename(pytester, case: str) -> list[dict]:
    """Commit 2 holds 72 MiB, commit 3 adds a README; bisect from the good commit to main must name commit 2, never
    skipping a commit; the commits it tried."""
    (pytester.path / "runners.py").write_text(RUNNERS.format(mib=72))
    grown = commit(pytester.path, "commit 2: hold 72 MiB")
    (pytester.path / "README").write_text("notes\n")
    commit(pytester.path, "commit 3: a README")
    done = subprocess.run([sys.executable, "-m", "gpu_budget", "bisect", "main~3", "main", "-k", case, "--json",
                           "bisect.json"], check=False, cwd=pytester.path, capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert f"gpu-budget bisect: first commit past the tolerance: {grown[:10]} commit 2: hold 72 MiB" in out, out
    tried = json.loads((pytester.path / "bisect.json").read_text())["tried"]
    assert all(t["outcome"] != "skip" for t in tried), tried
    return tried
