"""report/revision.py: the commit a session measured and whether its tree was dirty; None where git cannot tell."""

import subprocess
from pathlib import Path

import pytest

from gpu_budget.report import json_report, revision


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "test_a.py").write_text("def test_a():\n    pass\n")
    git(tmp_path, "add", "test_a.py")
    git(tmp_path, "commit", "-q", "-m", "a")
    return tmp_path


def test_a_clean_tree_names_its_commit(repo):
    assert revision.state(repo) == {"commit": git(repo, "rev-parse", "HEAD"), "dirty": False}


def test_an_edit_or_a_new_file_makes_the_tree_dirty_from_any_folder_in_it(repo):
    (repo / "sub").mkdir()
    (repo / "sub" / "new.py").write_text("")
    assert revision.state(repo / "sub") == {"commit": git(repo, "rev-parse", "HEAD"), "dirty": True}
    (repo / "sub" / "new.py").unlink()
    (repo / "test_a.py").write_text("def test_a():\n    assert 1\n")
    assert revision.state(repo)["dirty"] is True


def test_no_repository_no_commit_or_no_git_is_none_not_an_error(tmp_path, monkeypatch):
    outside = tmp_path / "plain"
    outside.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # the search for a repository stops here
    assert revision.state(outside) is None
    git(tmp_path / "plain", "init", "-q")
    assert revision.state(outside) is None  # a repository without a commit
    assert revision.state(tmp_path / "missing") is None  # a folder that is not there
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))  # no git at all
    assert revision.state(outside) is None


def test_the_json_report_records_it(tmp_path, repo):
    state = revision.state(repo)
    json_report.write_json(tmp_path / "r.json", [], {"key": "cpu"}, git=state)
    json_report.write_json(tmp_path / "none.json", [], {"key": "cpu"})
    import json

    assert json.loads((tmp_path / "r.json").read_text())["git"] == state
    assert json.loads((tmp_path / "none.json").read_text())["git"] is None
