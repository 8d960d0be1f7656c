"""benchmarks/suite.py --ref: the "before" of a change to the gate's time runs an earlier commit's own tree."""

import subprocess
import sys

import pytest

from benchmarks import suite
from benchmarks.common import short_commit

pytestmark = pytest.mark.skipif(not (suite.ROOT / ".git").exists(), reason="not a git checkout")


def test_a_worktree_holds_its_commit_and_is_gone_after(tmp_path):
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=suite.ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    assert short_commit("HEAD") == head
    with suite.worktree(head, tmp_path / "tree") as tree:
        assert (tree / "memtests").is_dir() and (tree / "baselines").is_dir() and (tree / "plugin" / "gpu_budget").is_dir()
        shown = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True,
                               check=True).stdout.strip()
        assert shown == head
    assert not tree.exists()
    listed = subprocess.run(["git", "worktree", "list"], cwd=suite.ROOT, capture_output=True, text=True, check=True).stdout
    assert str(tree) not in listed  # unregistered too, not only deleted


def test_an_earlier_commit_never_records_into_this_trees_baselines():
    proc = subprocess.run([sys.executable, "-m", "benchmarks.suite", "--parts", "tiny", "--ref", "HEAD", "--record-new"],
                          cwd=suite.ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "--ref runs an earlier commit" in proc.stderr, proc.stderr
