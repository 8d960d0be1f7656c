"""Real temporary git repositories for the end-to-end tests: git run in a folder, a commit of everything, an
environment in which git needs no user configuration, and the one-runner repository most of them commit (shared by
the against, bisect and record-runs tests)."""

import subprocess
from pathlib import Path

import pytest

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
PYTESTER_FILES = ".pytest_cache/\n__pycache__/\n.gitconfig\nstdout\nstderr\nrunpytest-*\n"  # pytester's own files
# a runner holding HOLD_MIB MiB (RUNNERS.format(mib=...)), and a test measuring it under a 2 GiB budget: the
# repository every against and bisect test commits, a figure changed from commit to commit
RUNNERS = "HOLD_MIB = {mib}\n\n\ndef run(ctx):\n    held = b'\\x01' * (HOLD_MIB << 20)\n    return {{}}\n"
CASE = '''import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_fn(gpu_budget):
    gpu_budget.measure(Scenario(name="fn", run="runners:run"))
'''


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True, text=True).stdout.strip()


def commit(folder: Path, message: str) -> str:
    """Everything in the folder committed (what .gitignore leaves); the new commit."""
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", message)
    return git(folder, "rev-parse", "HEAD")


def git_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """git's author and committer set, and no user or system configuration read (the sessions inherit it)."""
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


def start_repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> Path:
    """A pytester project as a new git repository on branch main, nothing committed yet: no CI variable, git's
    environment, an ini with an empty preload, a .gitignore of reports and pytester's own files, and `files`
    written (name -> text). Its folder."""
    monkeypatch.delenv("CI", raising=False)
    git_environment(monkeypatch)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    (pytester.path / ".gitignore").write_text("*.json\n" + PYTESTER_FILES)
    for name, text in files.items():
        (pytester.path / name).write_text(text)
    git(pytester.path, "init", "-q", "-b", "main")
    return pytester.path
