"""against/base_paths.py on real git histories: where the base side starts and what it is given when REF does not
hold the folder the run starts in or a path it names (no session runs here: the paths alone)."""

import subprocess
from pathlib import Path

import pytest

from gpu_budget.against.base_paths import base_paths
from gpu_budget.against.worktree import repo_at, resolve

ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
       "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def top(tmp_path, monkeypatch) -> Path:
    """A repository whose base holds mem_a/test_a.py, mem_b/test_b.py and memtests/test_m.py; at head mem_a's and
    mem_b's files are gathered in gputests/, memtests/ is renamed to renamed/, and newtests/ is added."""
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    git(tmp_path, "init", "-q", "-b", "main")
    for rel in ("mem_a/test_a.py", "mem_b/test_b.py", "memtests/test_m.py"):
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text(f"def test_{rel[-4]}():\n    assert '{rel}'\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    (tmp_path / "gputests").mkdir()
    git(tmp_path, "mv", "mem_a/test_a.py", "mem_b/test_b.py", "gputests/")
    git(tmp_path, "mv", "memtests", "renamed")
    (tmp_path / "newtests").mkdir()
    (tmp_path / "newtests" / "test_n.py").write_text("def test_n():\n    pass\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "head")
    return tmp_path


def paths(top: Path, here: str, *args: str):
    repo = repo_at(top, "main~1")
    return base_paths(repo, resolve(repo, "main~1"), top / here, [(a, (top / here / a.split("::")[0]).resolve()) for a in args])


def test_a_folder_made_of_two_old_folders_is_given_as_their_files(top):
    """Before: gputests left out at base, its cases "new"."""
    base = paths(top, ".", "gputests")  # the options given pass as they are
    assert base.base_args(["gputests", "-k", "x"]) == ["mem_a/test_a.py", "mem_b/test_b.py", "-k", "x"]
    assert (base.start, base.nothing, base.gone()) == (".", False, [])


def test_a_run_started_in_a_renamed_folder_starts_the_base_in_its_old_one(top):
    base = paths(top, "renamed", ".", "test_m.py::test_m")
    assert (base.start, base.base_args([".", "test_m.py::test_m"])) == ("memtests", [".", "test_m.py::test_m"])
    assert "the base session starts in memtests, the folder git sees it renamed from" in base.said
    assert paths(top, "renamed").start == "memtests"  # no path given: the folder itself


def test_a_run_started_in_a_gathered_folder_starts_above_it_given_the_old_files(top):
    base = paths(top, "gputests")
    assert (base.start, base.base_args(["-x"])) == (".", ["-x", "mem_a/test_a.py", "mem_b/test_b.py"])
    named = paths(top, "gputests", "test_b.py")
    assert named.base_args(["test_b.py"]) == ["mem_b/test_b.py"]


def test_a_new_folder_holds_nothing_at_base_and_a_held_path_outside_it_is_run_from_above(top):
    """Before: a path outside a folder REF lacks was a usage error ("the base side cannot start where it does not
    hold"); the base now starts above it, where the path is."""
    assert paths(top, "newtests", ".").nothing and paths(top, "newtests").nothing
    base = paths(top, "newtests", ".", "../mem_a")
    assert (base.start, base.base_args([".", "../mem_a"]), base.nothing) == (".", ["mem_a"], False)
    assert base.gone() == ["."]


def test_a_run_started_in_a_folder_ref_holds_starts_the_base_there(top):
    """`cd mem_a; pytest --gpu-budget test_a.py --gpu-budget-against=main~1`: the base session started in the
    worktree's top folder, where test_a.py is not ("ERROR: file or directory not found: test_a.py", exit 4)."""
    assert paths(top, "mem_a", "test_a.py").start == "mem_a"
    assert paths(top, "mem_a").start == "mem_a"
    assert paths(top, ".", "mem_a").start == "."


@pytest.fixture
def moved_in(tmp_path, monkeypatch) -> Path:
    """A repository whose base holds memtests/test_a.py, other/test_b.py, other/conftest.py and other/test_c.py; at
    head test_b.py and conftest.py are moved into memtests/ (which REF holds) and test_c.py into keep/."""
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    git(tmp_path, "init", "-q", "-b", "main")
    for rel in ("memtests/test_a.py", "other/test_b.py", "other/conftest.py", "other/test_c.py"):
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text(f"def test_{rel[-4]}():\n    assert '{rel}'\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    git(tmp_path, "mv", "other/test_b.py", "other/conftest.py", "memtests/")
    (tmp_path / "keep").mkdir()
    git(tmp_path, "mv", "other/test_c.py", "keep/")
    git(tmp_path, "commit", "-qm", "head")
    return tmp_path


def test_a_folder_held_at_base_is_given_the_test_files_moved_into_it_under_their_old_paths(moved_in):
    """`git mv other/test_b.py memtests/`, run as `pytest memtests`: before, the base ran memtests alone
    (base_args ["memtests"]), so test_b was "new" at head and its growth unjudged."""
    base = paths(moved_in, ".", "memtests")
    assert base.base_args(["memtests", "-k", "x"]) == ["memtests", "other/test_b.py", "-k", "x"]
    assert (base.start, base.nothing, base.gone()) == (".", False, [])
    assert base.said == "memtests: the base session is also given the test files git sees moved into it: other/test_b.py"
    inside = paths(moved_in, "memtests", ".")  # from inside it, and with no path given (pytest collects the folder)
    assert (inside.start, inside.base_args(["."])) == ("memtests", [".", "../other/test_b.py"])
    repo = repo_at(moved_in, "main~1")
    bare = base_paths(repo, resolve(repo, "main~1"), moved_in / "memtests", [], collects_here=True)
    assert (bare.start, bare.base_args(["-x"])) == ("memtests", ["-x", ".", "../other/test_b.py"])
    both = paths(moved_in, ".", "memtests", "other")  # other/ given too: its files are run there already
    assert both.base_args(["memtests", "other"]) == ["memtests", "other"]



def test_the_ini_files_testpaths_are_given_with_the_test_files_moved_into_them(moved_in):
    """`testpaths = memtests` in the ini file, `pytest --gpu-budget --gpu-budget-against=main~1` with no path, after
    `git mv other/test_b.py memtests/`: before, the base collected its own testpaths alone (base_args []), test_b was
    "new" at head and its growth unjudged."""
    repo = repo_at(moved_in, "main~1")
    ref = resolve(repo, "main~1")
    base = base_paths(repo, ref, moved_in, [], testpaths=[("memtests", moved_in / "memtests")])
    assert base.base_args(["-k", "memtests"]) == ["-k", "memtests", "memtests", "other/test_b.py"]
    assert base.said == ("the ini file's testpaths (memtests) read as if named on the command line: memtests: the "
                         "base session is also given the test files git sees moved into it: other/test_b.py")
    new = base_paths(repo, ref, moved_in, [], testpaths=[("memtests", moved_in / "memtests"), ("keep", moved_in / "keep")])
    assert new.base_args([]) == ["memtests", "other"]  # keep/, not at REF, as the folder its files came from
    still = base_paths(repo, ref, moved_in, [], testpaths=[("memtests", moved_in / "memtests"),
                                                           ("other", moved_in / "other")])
    assert (still.base_args([]), still.said) == ([], None)  # test_b's old folder is a testpath: nothing to widen


def test_renamed_testpaths_are_given_under_their_old_names(top):
    """`git mv memtests renamed` with `testpaths = renamed`: the base is given memtests."""
    repo = repo_at(top, "main~1")
    base = base_paths(repo, resolve(repo, "main~1"), top, [], testpaths=[("renamed", top / "renamed")])
    assert (base.start, base.base_args([])) == (".", ["memtests"])
    assert base.said == "the ini file's testpaths (renamed) read as if named on the command line: the base session " \
                        "is given memtests"
    new = base_paths(repo, resolve(repo, "main~1"), top, [], testpaths=[("newtests", top / "newtests")])
    assert (new.base_args([]), new.nothing) == ([], False)  # REF holds none: it collects its own ini's testpaths


def test_the_testpaths_read_are_pytests_own_and_none_where_one_is_outside_the_repository(pytester, monkeypatch):
    """Only a run whose paths come from the ini file's testpaths widens them; one outside the repository leaves them
    all to the base's own ini file (given the rest as paths, the base would run without it)."""
    from gpu_budget.against import testpaths_in_repo

    monkeypatch.chdir(pytester.path)
    (pytester.path / "memtests").mkdir()
    (pytester.path / "outside").mkdir()
    pytester.makeini("[pytest]\ntestpaths = memtests\n")
    config = pytester.parseconfig()
    assert testpaths_in_repo(config, pytester.path, pytester.path) == [("memtests", pytester.path / "memtests")]
    assert testpaths_in_repo(pytester.parseconfig("memtests"), pytester.path, pytester.path) == []  # a path named
    pytester.makeini("[pytest]\ntestpaths = memtests outside\n")
    assert testpaths_in_repo(pytester.parseconfig(), pytester.path, pytester.path / "memtests") == []
