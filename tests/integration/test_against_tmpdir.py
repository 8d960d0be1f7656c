"""`--gpu-budget-against=REF` where the temporary folder is inside the repository (TMPDIR=$PWD/tmp, ignored by git):
REF's worktree is made in the git folder instead, out of the head session's collection."""

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from git_project import CASE, RUNNERS, commit, git, git_environment


def test_a_temporary_folder_inside_the_repository_holds_no_worktree(monkeypatch):
    """Before: the head's session, collecting `.`, collected the worktree under tmp/ too, imported runners.py from it
    and measured the base's 8 MiB as the head's 72: "test_mem.py::test_fn ram_tree 27.60 MiB 27.41 MiB -0.7% ... pass"
    beside "tmp/gpu-budget-against-.../base/test_mem.py ... error" (ImportPathMismatchError). The repository is in a
    short folder: the gate's sockets under TMPDIR need a short path, which pytester's folder is not."""
    top = Path(tempfile.mkdtemp(prefix="gba-"))
    try:
        monkeypatch.delenv("CI", raising=False)
        git_environment(monkeypatch)
        files = {"pytest.ini": "[pytest]\ngpu_budget_preload =\n", ".gitignore": "*.json\n__pycache__/\ntmp/\n",
                 "test_mem.py": CASE, "runners.py": RUNNERS.format(mib=8)}
        for name, text in files.items():
            (top / name).write_text(text)
        git(top, "init", "-q", "-b", "main")
        commit(top, "8 MiB")
        (top / "runners.py").write_text(RUNNERS.format(mib=72))
        commit(top, "72 MiB")
        (top / "tmp").mkdir()
        monkeypatch.setenv("TMPDIR", str(top / "tmp"))
        done = subprocess.run([sys.executable, "-m", "pytest", "--gpu-budget", "--gpu-budget-against=HEAD~1",
                               "--gpu-budget-json=pair.json"], cwd=top, capture_output=True, text=True, timeout=300,
                              check=False)
        assert done.returncode == 1, done.stdout + done.stderr
        cases = {c["nodeid"]: c["status"] for c in json.loads((top / "pair.json").read_text())["cases"]}
        assert cases == {"test_mem.py::test_fn": "regression"}, done.stdout
        assert not [p for p in (top / ".git").iterdir() if p.name.startswith("gpu-budget-against-")]  # removed after
    finally:
        shutil.rmtree(top, ignore_errors=True)
