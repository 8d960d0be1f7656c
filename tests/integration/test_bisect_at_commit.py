"""against/bisect.py at_commit: the reference case's file followed across a rename is the one under GOOD's rootdir,
not another renamed file whose path ends as the node id's does (`examples/tests/test_a.py` beside `tests/test_a.py`)."""

from dataclasses import replace

from git_project import commit, git, git_environment

from gpu_budget.against.bisect import StepSettings, at_commit
from gpu_budget.model.budget import Tolerance
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Measurement, Result, Verdict

REFERENCE = Result(nodeid="tests/test_a.py::test_fn", scenario="fn", scale="tiny", verdict=Verdict("no-baseline"),
                   passed=True, message="ok", tolerance=Tolerance(rel=0.005, abs=2**22),
                   measurement=Measurement(status="ok", peaks=Peaks(ram=1, ram_tree=1)))


def test_the_case_file_renamed_is_the_one_under_the_rootdir(tmp_path, monkeypatch):
    """Both files renamed (tests/test_a.py -> tests/test_b.py, examples/tests/test_a.py -> .../test_old.py). Before:
    the example's rename came first and was taken, the node id read tests/test_old.py::test_fn and the argument was
    left naming tests/test_a.py: every commit from the rename on a skip ("file or directory not found"), the answer
    left open."""
    git_environment(monkeypatch)
    for folder in ("tests", "examples/tests"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "test_a.py").write_text(f"def test_fn():\n    '''{folder}'''\n")
    git(tmp_path, "init", "-q", "-b", "main")
    good = commit(tmp_path, "good")
    git(tmp_path, "mv", "examples/tests/test_a.py", "examples/tests/test_old.py")
    git(tmp_path, "mv", "tests/test_a.py", "tests/test_b.py")
    settings = StepSettings(tmp_path, tmp_path, ("tests/test_a.py::test_fn",), tmp_path, tmp_path / "log", REFERENCE, 1,
                            good, None, "")
    assert at_commit(settings) == ("tests/test_b.py::test_fn", ("tests/test_b.py::test_fn",))
    # run from tests/ with its own ini file there: the rootdir is tests/, node ids start below it
    at_tests = replace(settings, folder=tmp_path / "tests", args=("test_a.py::test_fn",), rootdir="tests",
                       reference=replace(REFERENCE, nodeid="test_a.py::test_fn"))
    assert at_commit(at_tests) == ("test_b.py::test_fn", ("test_b.py::test_fn",))


def test_a_folder_argument_renamed_since_good_is_given_under_its_name_at_the_commit(tmp_path, monkeypatch):
    """`-- memtests` where a later commit ran `git mv memtests gputests`. Before: each commit from the rename on was
    given `memtests`, which it lacks, and was a skip ("no memory-budget test was collected"), the answer left open."""
    git_environment(monkeypatch)
    (tmp_path / "memtests").mkdir()
    (tmp_path / "memtests" / "test_a.py").write_text("def test_fn():\n    pass\n")
    (tmp_path / "memtests" / "test_b.py").write_text("def test_other():\n    pass\n")
    git(tmp_path, "init", "-q", "-b", "main")
    good = commit(tmp_path, "good")
    git(tmp_path, "mv", "memtests", "gputests")
    reference = replace(REFERENCE, nodeid="memtests/test_a.py::test_fn")
    settings = StepSettings(tmp_path, tmp_path, ("-k", "memtests", "memtests", "-m", "memtests"), tmp_path,
                            tmp_path / "log", reference, 1, good, None, "")
    assert at_commit(settings) == ("gputests/test_a.py::test_fn", ("-k", "memtests", "gputests", "-m", "memtests"))
