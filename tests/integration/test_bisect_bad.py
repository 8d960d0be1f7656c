"""`python -m gpu_budget bisect` where git names BAD itself as the first bad commit: git never runs the step at BAD, so
BAD is measured before it is named, and a BAD within the tolerance of GOOD is said, not named as past it."""

import json
import subprocess
import sys

from git_project import CASE, RUNNERS, commit, git, start_repo


def history(pytester, monkeypatch, *sizes: int) -> list[str]:
    """One commit per MiB held, the first "main~N"; their hashes."""
    start_repo(pytester, monkeypatch, {"test_mem.py": CASE})
    out = []
    for n, mib in enumerate(sizes):
        (pytester.path / "runners.py").write_text(RUNNERS.format(mib=mib) + f"# commit {n}\n")
        out.append(commit(pytester.path, f"commit {n}: {mib} MiB"))
    return out


def bisect(pytester, good: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpu_budget", "bisect", good, "main", "-k", "test_fn", "--json",
                           "bisect.json"], check=False, cwd=pytester.path, capture_output=True, text=True, timeout=300)


def test_a_bad_within_the_tolerance_is_said_not_named_past_it(pytester, monkeypatch):
    """Nothing moves over three commits. Before: exit 0, "first commit past the tolerance: <BAD>" with no subject and no
    figure: BAD was never measured."""
    *_, bad = history(pytester, monkeypatch, 8, 8, 8)
    done = bisect(pytester, "main~2")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "first commit past the tolerance" not in out, out
    assert f"gpu-budget bisect: no single first commit: BAD main ({bad[:10]}) is within the tolerance" in out, out
    found = json.loads((pytester.path / "bisect.json").read_text())
    assert found["first"] is None
    assert [t["outcome"] for t in found["tried"] if t["commit"] == bad] == ["within"], found
    assert git(pytester.path, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_bad_right_after_good_is_measured_once_and_named_with_its_figure(pytester, monkeypatch):
    """GOOD holds 8 MiB, BAD (its child) 72. Before: GOOD measured a second time as a step ("within"), BAD named with
    no subject and no figure."""
    good, bad = history(pytester, monkeypatch, 8, 72)
    done = bisect(pytester, "main~1")
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert f"gpu-budget bisect: first commit past the tolerance: {bad[:10]} commit 1: 72 MiB (ram_tree" in out, out
    tried = json.loads((pytester.path / "bisect.json").read_text())["tried"]
    assert [(t["commit"], t["outcome"]) for t in tried] == [(bad, "moved")], tried
    assert good[:10] not in out.split("in the order tried:")[1].split("\n", 2)[2], out  # GOOD: the reference only


def test_a_folder_good_does_not_hold_is_bad_input_naming_it(pytester, monkeypatch):
    """Started in sub/, which only BAD holds. Before: a FileNotFoundError traceback and exit 1 (the code of an answer
    skips left open)."""
    history(pytester, monkeypatch, 8)
    (pytester.path / "sub").mkdir()
    (pytester.path / "sub" / "test_sub.py").write_text(CASE)
    commit(pytester.path, "sub/")
    done = subprocess.run([sys.executable, "-m", "gpu_budget", "bisect", "main~1", "main", "-k", "test_fn"],
                          check=False, cwd=pytester.path / "sub", capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("gpu-budget bisect: error: bisect: sub not found at GOOD main~1 ("), done.stderr
    assert git(pytester.path, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_json_path_in_no_folder_is_bad_input_before_anything_runs(pytester, monkeypatch):
    """Before: the bisect ran to its end, printed its answer, then a FileNotFoundError traceback and exit 1."""
    history(pytester, monkeypatch, 8, 72)
    done = subprocess.run([sys.executable, "-m", "gpu_budget", "bisect", "main~1", "main", "-k", "test_fn", "--json",
                           "no/such/folder/bisect.json"], check=False, cwd=pytester.path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "reference" not in done.stdout, done.stdout + done.stderr
    assert "--json=no/such/folder/bisect.json: " in done.stderr and ": no folder " in done.stderr, done.stderr
    assert git(pytester.path, "worktree", "list", "--porcelain").count("worktree ") == 1
