"""`python -m gpu_budget bisect` at a commit whose test fails after measure() (its own assertion, the row's
`test_outcome`): the commit is broken, so its figure is not a verdict on the case: a bisect skip with pytest's reason,
as any commit at which the case cannot be measured; at GOOD, the reference cannot be taken from it."""

import json
import subprocess
import sys

from git_project import commit, git, start_repo

RUNNERS = "HOLD_MIB = {mib}\nLOSS_OK = {ok}\n\n\ndef run(ctx):\n    held = b'\\x01' * (HOLD_MIB << 20)\n    return {{}}\n"
CASE = '''import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_fn(gpu_budget):
    gpu_budget.measure(Scenario(name="fn", run="runners:run"))
    import runners
    assert runners.LOSS_OK, "loss diverged"
'''


def history(pytester, monkeypatch, *states: tuple[int, bool]) -> list[str]:
    """One commit per (MiB held, whether the test's own assertion holds), the first "main~N"; their hashes."""
    start_repo(pytester, monkeypatch, {"test_mem.py": CASE})
    out = []
    for n, (mib, ok) in enumerate(states):
        (pytester.path / "runners.py").write_text(RUNNERS.format(mib=mib, ok=ok))
        out.append(commit(pytester.path, f"commit {n}: {mib} MiB{'' if ok else ', test fails'}"))
    return out


def bisect(pytester, good: str, *more: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpu_budget", "bisect", good, "main", "-k", "test_fn", *more],
                          check=False, cwd=pytester.path, capture_output=True, text=True, timeout=300)


def test_a_commit_whose_test_fails_after_measure_is_skipped_with_the_reason(pytester, monkeypatch):
    """Commit 1 grows 8 -> 72 MiB; commit 2 breaks the run (it holds 8 MiB, its test fails after measure()); commit 3
    fixes it. Before: commit 2 read "within" on its figure, and the answer was commit 3, with no word of the failure."""
    _, grown, broken, _ = history(pytester, monkeypatch, (8, True), (72, True), (8, False), (72, True))
    done = bisect(pytester, "main~3", "--json", "bisect.json")
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert f"gpu-budget bisect: first commit past the tolerance: {grown[:10]} commit 1: 72 MiB" in out, out
    tried = {t["commit"]: t for t in json.loads((pytester.path / "bisect.json").read_text())["tried"]}
    assert tried[broken]["outcome"] == "skip", tried
    assert tried[broken]["why"].startswith("its test failed after measure(): "), tried[broken]
    assert "loss diverged" in tried[broken]["why"] and tried[broken]["why"] in out
    assert git(pytester.path, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_good_whose_test_fails_after_measure_is_refused_naming_it(pytester, monkeypatch):
    """Before: GOOD's figure was taken as the reference from a run its own test failed."""
    history(pytester, monkeypatch, (8, False), (72, True))
    done = bisect(pytester, "main~1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "the case cannot be measured at GOOD main~1" in done.stderr, done.stderr
    assert "its test failed after measure(): " in done.stderr and "loss diverged" in done.stderr, done.stderr


def test_a_commit_whose_test_fails_before_measure_is_skipped_with_the_reason(pytester, monkeypatch):
    """Commit 1 grows 8 -> 72 MiB and its test raises before measure(); commit 2 (BAD) mends the test: skips leave it
    open. Before: commit 1's reason read "the case is not collected here", though its test was collected and failed."""
    history(pytester, monkeypatch, (8, True))
    (pytester.path / "runners.py").write_text(RUNNERS.format(mib=72, ok=True))
    (pytester.path / "test_mem.py").write_text(CASE.replace("    gpu_budget.measure(", "    raise KeyError('cfg')\n"
                                                             "    gpu_budget.measure("))
    raising = commit(pytester.path, "commit 1: 72 MiB, the test raises")
    (pytester.path / "test_mem.py").write_text(CASE)
    commit(pytester.path, "commit 2: mend the test")
    done = bisect(pytester, "main~2", "--json", "bisect.json")
    assert done.returncode == 1, done.stdout + done.stderr
    tried = json.loads((pytester.path / "bisect.json").read_text())["tried"]
    assert [(t["commit"], t["outcome"], t["why"]) for t in tried] == [
        (raising, "skip", "its test failed with no case of it measured: KeyError: 'cfg'")], tried
