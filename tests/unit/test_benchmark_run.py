"""benchmarks/common.py: every benchmark section's JSON names the commit it measured and whether the tree was dirty."""

import json
import subprocess

from benchmarks import common


def git(folder, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder, check=True,
                          capture_output=True, text=True).stdout.strip()


def run_of(tmp_path, name: str) -> dict:
    return json.loads(common.write("section", {"figure": 1}, path=tmp_path / f"{name}.json").read_text())["run"]


def test_a_sections_run_records_the_commit_and_a_dirty_tree(tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "bench.py").write_text("")
    git(tree, "init", "-q")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "bench")
    monkeypatch.setattr(common, "ROOT", tree)  # the checkout a section measures
    head = git(tree, "rev-parse", "HEAD")
    clean = run_of(tmp_path, "clean")
    assert clean["git"] == {"commit": head, "dirty": False} and head.startswith(clean["commit"])
    (tree / "bench.py").write_text("# edited\n")
    assert run_of(tmp_path, "edited")["git"] == {"commit": head, "dirty": True}


def test_without_git_the_run_says_none_and_still_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    run = run_of(tmp_path, "none")
    assert run["git"] is None and run["commit"] is None
