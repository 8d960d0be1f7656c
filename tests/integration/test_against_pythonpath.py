"""An absolute PYTHONPATH entry into the repository (`PYTHONPATH=$PWD/lib`, a src layout not installed): the base
side's sessions and a bisect's steps import it from REF's worktree, not from the working tree. Before, both imported
the head's module wherever they started: the base measured the head against itself and a regression passed."""

import json
import subprocess
import sys

from git_project import CASE, RUNNERS, commit, start_repo

from conftest import inner_pythonpath


def test_a_module_found_through_an_absolute_pythonpath_is_refs_at_the_base(pytester, monkeypatch):
    top = start_repo(pytester, monkeypatch, {"test_mem.py": CASE})
    (top / "lib").mkdir()
    (top / "lib" / "runners.py").write_text(RUNNERS.format(mib=8))
    commit(top, "8 MiB")
    (top / "lib" / "runners.py").write_text(RUNNERS.format(mib=72))
    bad = commit(top, "72 MiB")
    inner_pythonpath(monkeypatch, top / "lib")  # only PYTHONPATH finds lib/runners.py: no conftest, not the rootdir

    result = pytester.runpytest_subprocess("--gpu-budget", "--gpu-budget-against=HEAD~1")
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*test_mem.py::test_fn*ram_tree*regression*"])

    done = subprocess.run([sys.executable, "-m", "gpu_budget", "bisect", "main~1", "main", "-k", "test_fn", "--json",
                           "bisect.json"], check=False, cwd=top, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((top / "bisect.json").read_text())["first"] == bad, done.stdout
