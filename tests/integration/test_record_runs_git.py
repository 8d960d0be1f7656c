"""A baseline recorded over N runs in a real git repository: committed, then later sessions judged against its spread.

The user's project is a git repository (git init, commits) holding the noisy
script of noisy_script.py and its memtest. The baseline is recorded over four
fresh runs and committed; a later session of the unchanged code, run to a
figure past the default tolerance but inside six times the stored spread,
passes against the committed entry and leaves it as committed; a commit that
makes the script hold 64 MiB more fails against the same entry.
"""

import json

import noisy_script
import pytest
from git_project import PYTESTER_FILES, commit, git, git_environment

from gpu_budget.declare.marks import DEFAULT_TOLERANCE

MiB = 2**20


@pytest.fixture
def repo(pytester, monkeypatch):
    """A git repository without an ini file, its first commit the script and its memtest (the run counter ignored)."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("FIXED_MIB", raising=False)
    git_environment(monkeypatch)
    noisy_script.write(pytester.path)
    (pytester.path / ".gitignore").write_text("r-*.json\nmemtests/counter\n" + PYTESTER_FILES)
    git(pytester.path, "init", "-q", "-b", "main")
    commit(pytester.path, "a noisy script and its memtest")
    return pytester


def test_a_committed_spread_judges_later_sessions_and_a_planted_commit_still_fails(repo, monkeypatch):
    recorded, row = noisy_script.run(repo, "record", "--gpu-budget-update", "--gpu-budget-record-runs=4")
    recorded.assert_outcomes(passed=1)
    (written,) = git(repo.path, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert written.startswith("?? baselines/") and written.endswith("/test_noisy.json"), written  # the entry, new
    path = written[3:]
    commit(repo.path, "record test_noisy over 4 runs")
    entry = json.loads(git(repo.path, "show", f"HEAD:{path}"))["entries"]["tiny"]["memtests/test_noisy.py::test_noisy"]  # as committed
    spread = entry["spread"]
    assert spread["runs"] == 4 and 3 * MiB < spread["by_metric"]["ram_tree"] < 9 * MiB, spread
    then = entry["peaks"]["ram_tree"]

    monkeypatch.setenv("FIXED_MIB", "16")  # 10 to 12 MiB over the median run: inside 6x its spread
    later, row = noisy_script.run(repo, "later")
    later.assert_outcomes(passed=1)
    assert row["verdict"] == "pass", row["message"]
    assert "stored spread" in row["message"] and "over 4 runs" in row["message"], row["message"]
    assert row["peaks"]["ram_tree"] > DEFAULT_TOLERANCE.limit(then), (row["peaks"], then)  # the tolerance alone fails it
    assert git(repo.path, "status", "--porcelain") == ""  # judged against the committed entry, which stays as committed

    held = repo.path / "memtests" / "held.py"
    planted = noisy_script.HELD.replace(noisy_script.BASE_MIB, "(96 + extra)")
    assert planted != noisy_script.HELD
    held.write_text(planted)
    commit(repo.path, "hold 64 MiB more")
    failed, row = noisy_script.run(repo, "planted")
    failed.assert_outcomes(failed=1)
    assert row["verdict"] == "regression", row["message"]
    assert "over 4 recorded runs" in row["message"] and "6x its spread" in row["message"], row["message"]
    assert row["peaks"]["ram_tree"] > then + 6 * spread["by_metric"]["ram_tree"]
    assert git(repo.path, "status", "--porcelain") == ""  # a regression rewrites nothing
