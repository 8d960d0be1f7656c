"""against/worktree.py and bisect's range on the git shapes CI has: an abbreviated hash that names several commits,
and a shallow clone (actions/checkout's default depth 1) that lacks REF's history. Each is said as what it is, not
as a commit that does not exist."""

import shutil
import subprocess
from pathlib import Path

import pytest

from gpu_budget.against import bisect as bisect_module
from gpu_budget.against.worktree import AgainstError, repo_at, resolve

ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
       "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}


def git(folder: Path, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(["git", *args], cwd=folder, input=stdin, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def history(tmp_path, monkeypatch) -> Path:
    """A repository on main: three commits of f.txt, the first tagged v1."""
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    for n in range(3):
        (origin / "f.txt").write_text(f"{n}\n")
        git(origin, "add", "-A")
        git(origin, "commit", "-qm", f"c{n}")
        if n == 0:
            git(origin, "tag", "v1")
    return origin


def shallow(origin: Path, into: Path) -> Path:
    """A depth-1 clone of `origin`, as actions/checkout makes by default."""
    git(origin.parent, "clone", "-q", "--depth", "1", f"file://{origin}", str(into))
    return into


def test_an_ambiguous_abbreviated_hash_is_named_so_with_its_candidates(history):
    """Before: "no commit '8f9b' in ... (not a branch, tag or commit there; fetch it first?)", though two are there."""
    lines = []
    for k in range(1200):  # 1200 commits: some two share a 4-digit prefix (deterministic: fixed dates and messages)
        message = f"c{k}\n"
        lines.append(f"commit refs/heads/many\ncommitter t <t@e> {1_700_000_000 + k} +0000\n"
                     f"data {len(message)}\n{message}\n")
    git(history, "fast-import", "--quiet", stdin="".join(lines))
    commits = git(history, "rev-list", "many").split()
    seen: dict[str, str] = {}
    prefix = next(c[:4] for c in commits if seen.setdefault(c[:4], c) != c)
    repo = repo_at(history, prefix)
    with pytest.raises(AgainstError) as raised:
        resolve(repo, prefix, "GOOD")
    said = str(raised.value)
    assert said.startswith(f"GOOD={prefix}: ambiguous in {history}: ") and "give more digits" in said, said
    assert said.count(f" {prefix}") >= 2 and "fetch it first" not in said, said


def test_a_ref_missing_from_a_shallow_clone_says_it_is_shallow(history, tmp_path):
    """Before: "no commit 'HEAD~1' ... (not a branch, tag or commit there; fetch it first?)", not saying the clone
    holds one commit of the history (actions/checkout's default fetch-depth: 1)."""
    clone = shallow(history, tmp_path / "ci")
    repo = repo_at(clone, "HEAD~1")
    with pytest.raises(AgainstError, match=r"no commit 'HEAD~1' in .*: the repository is a shallow clone, .*"
                                           r"git fetch --unshallow.*fetch-depth: 0"):
        resolve(repo, "HEAD~1")


def test_a_branch_fetched_only_as_a_remote_s_names_the_remote_branch(history, tmp_path):
    """A full clone on another branch (actions/checkout with fetch-depth: 0 on a pull request) holds `main` only as
    origin/main. Before: "no commit 'main' in ... (not a branch, tag or commit there; fetch it first?)", though it is
    fetched: git resolves no remote branch by its short name."""
    git(history, "checkout", "-qb", "feature/x")
    clone = tmp_path / "ci"
    git(history.parent, "clone", "-q", "-b", "feature/x", f"file://{history}", str(clone))
    repo = repo_at(clone, "main")
    with pytest.raises(AgainstError) as raised:
        resolve(repo, "main")
    said = str(raised.value)
    assert "origin/main" in said and "fetch it first" not in said, said
    assert said.startswith("--gpu-budget-against=main: no branch 'main' in "), said


def test_bisect_in_a_shallow_clone_does_not_call_good_no_ancestor(history, tmp_path, capsys, monkeypatch):
    """GOOD fetched alone at depth 1 into a depth-1 clone. Before: "GOOD v1 (...) is not an ancestor of BAD main
    (...)", though it is: the clone lacks the commits between them."""
    clone = shallow(history, tmp_path / "ci")
    git(clone, "fetch", "-q", "--depth", "1", "origin", "tag", "v1")
    monkeypatch.chdir(clone)
    assert bisect_module.main(["v1", "HEAD", "-k", "test_x"]) == 2
    err = capsys.readouterr().err
    assert "GOOD v1 (" in err and "is not an ancestor" not in err, err
    assert "shallow clone" in err and "git fetch --unshallow" in err, err


def test_a_run_s_folder_is_removed_once_a_process_still_writing_into_it_stops(tmp_path, monkeypatch):
    """A bisect killed mid-step left its folder: the step's session, orphaned, wrote into it as it ended, and the one
    removal (its errors ignored) failed on a folder not empty. The removal is tried again while that goes on."""
    from gpu_budget.against import worktree

    holder = tmp_path / "gpu-budget-against-x"
    (holder / "scratch").mkdir(parents=True)
    real, calls = shutil.rmtree, []

    def written_meanwhile(path, ignore_errors=False):  # the first two removals meet a file written behind them
        calls.append(path)
        real(path, ignore_errors=ignore_errors)
        if len(calls) <= 2:
            (holder / "scratch").mkdir(parents=True)
            (holder / "scratch" / "report.json").write_text("{}")

    monkeypatch.setattr(worktree.shutil, "rmtree", written_meanwhile)
    worktree.remove_holder(holder)
    assert not holder.exists() and len(calls) == 3
