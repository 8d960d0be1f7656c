"""`--gpu-budget-against=REF` where a case's code lives in a git submodule: REF's worktree holds the submodule at
the commit REF records, checked out from the working tree's copy (against/submodules.py)."""

import json
import subprocess
import sys

from git_project import RUNNERS, commit, git, start_repo

from conftest import inner_pythonpath

CASE = '''import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_fn(gpu_budget):
    gpu_budget.measure(Scenario(name="fn", run="vendor.runners:run"))
'''


def vendored(pytester, monkeypatch, tmp_path_factory):
    """A project whose runner is in the submodule vendor/ (8 MiB held), then a commit bumping it to 72 MiB; the
    library's folder and the bump's commit."""
    library = tmp_path_factory.mktemp("library")
    git(library, "init", "-q", "-b", "main")
    (library / "runners.py").write_text(RUNNERS.format(mib=8))
    start_repo(pytester, monkeypatch, {"test_mem.py": CASE})
    commit(library, "8 MiB")
    top = pytester.path
    git(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "vendor")
    commit(top, "vendor the library")
    (top / "vendor" / "runners.py").write_text(RUNNERS.format(mib=72))
    commit(top / "vendor", "72 MiB")
    bump = commit(top, "bump vendor")
    inner_pythonpath(monkeypatch)
    return library, bump


def test_a_submodule_bump_that_grows_a_peak_is_a_regression(pytester, monkeypatch, tmp_path_factory):
    """Before: the worktree's vendor/ was empty, the base's case an error ("No module named 'vendor.runners'"), the
    head judged on its budget alone: exit 0, "1 error at base; passed"."""
    library, _ = vendored(pytester, monkeypatch, tmp_path_factory)
    top = pytester.path
    result = pytester.runpytest_subprocess("--gpu-budget", "--gpu-budget-against=HEAD~1")
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*test_mem.py::test_fn*ram_tree*regression*"])
    assert not (library / ".git" / "objects" / "info" / "alternates").exists()  # the user's repositories untouched
    assert git(top / "vendor", "worktree", "list").count("\n") == 0


def test_a_bisect_checks_each_commits_submodule_out(pytester, monkeypatch, tmp_path_factory):
    """Before: the case could not be measured past GOOD (vendor/ empty: "No module named 'vendor.runners'"), each
    commit a skip: "no single first commit: skipped commits leave it open"."""
    _, bump = vendored(pytester, monkeypatch, tmp_path_factory)
    (pytester.path / "README").write_text("after the bump\n")
    commit(pytester.path, "after")
    done = subprocess.run([sys.executable, "-m", "gpu_budget", "bisect", "main~2", "main", "-k", "test_fn", "--json",
                           "bisect.json"], check=False, cwd=pytester.path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((pytester.path / "bisect.json").read_text())["first"] == bump, done.stdout
