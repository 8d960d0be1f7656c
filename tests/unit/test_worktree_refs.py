"""against/worktree.py on the git shapes CI has: an abbreviated hash that names several commits is said as what it
is, not as a commit that does not exist."""

import subprocess
from pathlib import Path

import pytest

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

