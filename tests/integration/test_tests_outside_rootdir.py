"""A session whose test files lie outside pytest's rootdir (`pytest -c configs/ci.ini tests`: the rootdir is configs/)
prunes as one started beside them does. Such a test's node id is not its path from the rootdir, and the labels a
passing test measured were looked up at rootdir/<node id's file> (configs/test_l.py), a file that is not there: an
--gpu-budget-update run of the whole suite kept the entry of a label renamed ('old' -> 'new'), which renaming it back
was then judged against, and --gpu-budget-against showed no stored entry for it. Two test files of one name in no
project, run from one, once shared a key (their name)."""

import json

from git_project import PYTESTER_FILES, commit, git, git_environment

from conftest import RUNNERS, inner_pythonpath

TEST = '''
import os
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="1 GiB")
def test_l(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 8}), label=os.environ["LABEL"])
'''


def test_an_update_drops_a_renamed_label_of_a_test_outside_the_rootdir(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    (pytester.path / "configs").mkdir()
    (pytester.path / "configs" / "ci.ini").write_text("[pytest]\ngpu_budget_preload =\n")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_l.py").write_text(TEST)
    (pytester.path / "runners.py").write_text(RUNNERS)
    inner_pythonpath(monkeypatch, pytester.path)  # configs/ is the rootdir: no conftest puts runners.py on sys.path
    args = ("-p", "no:randomly", "-c", "configs/ci.ini", "--gpu-budget", "tests")
    monkeypatch.setenv("LABEL", "old")
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=1)
    monkeypatch.setenv("LABEL", "new")
    pytester.runpytest_subprocess(*args, "--gpu-budget-update").assert_outcomes(passed=1)
    (path,) = (pytester.path / "configs" / "baselines").glob("*/test_l.json")
    assert set(json.loads(path.read_text())["entries"]["tiny"]) == {"tests/test_l.py::test_l::new"}


NAMESAKE = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="1 GiB")
def test_x(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": MIB}))
'''


def test_two_namesakes_in_no_project_are_judged_each_against_its_own_entry(pytester, monkeypatch, tmp_path_factory):
    """`pytest ../ext/a ../ext/b` from a project: ext/b/test_same.py (in no project) was judged against
    ext/a/test_same.py's entry (both keyed 'test_same.py::test_x'): "regression FAIL" on its first run."""
    monkeypatch.delenv("CI", raising=False)
    ext = tmp_path_factory.mktemp("ext")
    for sub, mib in (("a", 8), ("b", 40)):
        (ext / sub).mkdir()
        (ext / sub / "test_same.py").write_text(NAMESAKE.replace("MIB", str(mib)))
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    (pytester.path / "runners.py").write_text(RUNNERS)
    inner_pythonpath(monkeypatch, pytester.path)
    args = ("-p", "no:randomly", "--import-mode=importlib", "--gpu-budget", str(ext / "a"), str(ext / "b"))
    for _ in range(2):
        pytester.runpytest_subprocess(*args).assert_outcomes(passed=2)
    (path,) = (pytester.path / "baselines").glob("*/test_same.json")
    assert set(json.loads(path.read_text())["entries"]["tiny"]) == {f"../{ext.name}/{sub}/test_same.py::test_x"
                                                                    for sub in ("a", "b")}


def test_against_shows_the_stored_entry_of_a_test_outside_the_rootdir(pytester, monkeypatch, tmp_path_factory):
    """--gpu-budget-against looked the stored entry up at rootdir/<node id's file> (configs/test_l.py), a file that is
    not there: the pair's "stored" column stayed empty for a case with a baseline."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GPU_BUDGET_AGAINST_SIDE", raising=False)
    git_environment(monkeypatch)
    monkeypatch.setenv("TMPDIR", str(tmp_path_factory.mktemp("against-tmp")))
    monkeypatch.setenv("LABEL", "one")
    (pytester.path / "configs").mkdir()
    (pytester.path / "configs" / "ci.ini").write_text("[pytest]\ngpu_budget_preload =\n")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_l.py").write_text(TEST)
    (pytester.path / "runners.py").write_text(RUNNERS)
    (pytester.path / ".gitignore").write_text("*.json\n" + PYTESTER_FILES)
    inner_pythonpath(monkeypatch, pytester.path)
    git(pytester.path, "init", "-q", "-b", "main")
    commit(pytester.path, "base")
    args = ("-p", "no:randomly", "-c", "configs/ci.ini", "--gpu-budget")
    pytester.runpytest_subprocess(*args, "tests").assert_outcomes(passed=1)
    (pytester.path / "README").write_text("a change that moves no peak\n")
    commit(pytester.path, "docs only")
    result = pytester.runpytest_subprocess(*args, "--gpu-budget-against=HEAD~1", "--gpu-budget-json=pair.json", "tests")
    assert result.ret == 0, result.stdout.str()
    (case,) = json.loads((pytester.path / "pair.json").read_text())["cases"]
    assert case["nodeid"] == "test_l.py::test_l::one" and case["stored"]["peaks"]["ram_tree"] > 0, case
