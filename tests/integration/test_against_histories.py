"""`--gpu-budget-against=REF` on histories a user makes: a test file renamed, a case at head only, a module that cannot
be collected at one side. Each test commits a base and a head in a real git repository and runs one --against run
(two sessions per side at least); git's rename detection is also tried alone on an uncommitted rename."""

import json
from pathlib import Path

import pytest
from git_project import PYTESTER_FILES, commit, git, git_environment

from gpu_budget.against.renames import renamed_files

SIZES = (8, 64, 96, 512)  # MiB; runners.hold_<n> holds n MiB
RUNNERS = "".join(f"def hold_{mib}(ctx):\n    held = b'\\x01' * ({mib} << 20)\n    return {{}}\n\n\n" for mib in SIZES)
HEADER = "import pytest\nfrom gpu_budget import Scenario\n"
CASE = '''

@pytest.mark.gpu_budget(ram="{budget}")
def test_{name}(gpu_budget):
    gpu_budget.measure(Scenario(name="{name}", run="runners:hold_{mib}"))
'''


def case(name: str, mib: int, budget: str = "2 GiB") -> str:
    return CASE.format(name=name, mib=mib, budget=budget)


def module(*cases: str) -> str:
    return HEADER + "".join(cases)


@pytest.fixture
def project(pytester, monkeypatch, tmp_path_factory):
    """A git repository with no commit yet: runners.py (hold(mib) holds mib MiB), its own TMPDIR."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GPU_BUDGET_AGAINST_SIDE", raising=False)
    git_environment(monkeypatch)
    monkeypatch.setenv("TMPDIR", str(tmp_path_factory.mktemp("against-tmp")))
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    (pytester.path / ".gitignore").write_text("*.json\n" + PYTESTER_FILES)
    (pytester.path / "runners.py").write_text(RUNNERS)
    git(pytester.path, "init", "-q", "-b", "main")
    return pytester


def judged(pytester, ret: int, lines: list[str], *args: str) -> str:
    """One --against run against main~1 from the working folder (`args`: the paths it names, if any), its report in
    pair.json: its exit code and these lines of its output asserted; its output."""
    result = pytester.runpytest_subprocess("--gpu-budget", *args, "--gpu-budget-against=main~1",
                                           f"--gpu-budget-json={pytester.path / 'pair.json'}")
    out = result.stdout.str()
    assert result.ret == ret, out
    result.stdout.fnmatch_lines(lines)
    return out


def cases(pytester) -> dict:
    return {c["nodeid"]: c for c in json.loads((pytester.path / "pair.json").read_text())["cases"]}


def test_a_renamed_test_file_is_one_case_and_its_growth_fails(project):
    """test_a.py at base, test_b.py at head (git mv) holding 512 MiB instead of 64: before, "1 new, 1 removed", exit 0."""
    (project.path / "test_a.py").write_text(module(case("x", 64)))
    commit(project.path, "base")
    git(project.path, "mv", "test_a.py", "test_b.py")
    (project.path / "test_b.py").write_text(module(case("x", 512)))
    commit(project.path, "rename test_a.py and hold 512 MiB")
    out = judged(project, 1, ["*test_b.py::test_x (renamed from test_a.py)*ram_tree*MiB*MiB*regression*",
                              "regression: test_b.py::test_x: renamed from test_a.py; ram_tree head * > base *",
                              "*gpu-budget against main~1: 1 regression; FAILED*"])
    assert "removed" not in out and "new" not in out.split("gpu-budget against main~1:")[-1]
    found = cases(project)
    assert list(found) == ["test_b.py::test_x"]
    x = found["test_b.py::test_x"]
    assert (x["status"], x["passed"], x["renamed_from"]) == ("regression", False, "test_a.py")
    assert x["figures"][0]["change"] > 4  # 64 -> 512 MiB held, on top of the interpreter's own


def test_a_file_renamed_with_heavy_edits_pairs_its_case_by_name_and_its_growth_fails(project):
    """test_a.py at base; at head test_b.py, rewritten past git's 50 % similarity (a deletion and an addition to git),
    its case holding 512 MiB instead of 64. Before: "1 new, 1 removed", exit 0, the 8x growth unjudged."""
    (project.path / "test_a.py").write_text(module(case("x", 64)))
    commit(project.path, "base")
    (project.path / "test_a.py").unlink()
    notes = "".join(f"# a note of the rewrite, line {k}: the helpers below explain what each case measures\n"
                    for k in range(30))
    (project.path / "test_b.py").write_text(notes + module(case("x", 512)))
    commit(project.path, "rewrite test_a.py as test_b.py and hold 512 MiB")
    assert git(project.path, "diff", "-M", "--name-status", "main~1").split() == ["D", "test_a.py", "A", "test_b.py"]
    judged(project, 1, ["*test_b.py::test_x (renamed from test_a.py)*ram_tree*MiB*MiB*regression*",
                        ("regression: test_b.py::test_x: renamed from test_a.py (git saw no rename: paired by the case's "
                         "name*; ram_tree head * > base *"),
                        "*gpu-budget against main~1: 1 regression; FAILED*"])
    x = cases(project)["test_b.py::test_x"]
    assert (x["status"], x["renamed_from"], x["paired_by"]) == ("regression", "test_a.py", "name")


def test_a_case_at_head_only_shows_its_figures_and_is_judged_on_its_budget(project):
    """Before: `-` in every column and "figures": [] though it was measured; over its budget it must fail."""
    (project.path / "test_old.py").write_text(module(case("old", 8)))
    commit(project.path, "base")
    (project.path / "test_new.py").write_text(module(case("within", 8), case("over", 96, "64 MiB")))
    (project.path / "test_old.py").unlink()
    commit(project.path, "two new cases, test_old.py removed")
    judged(project, 1, ["*test_new.py::test_within*ram_tree*-*MiB*-*- / *unpaired*",
                        "*test_new.py::test_over*ram_tree*-*MiB*-*- / *over-budget*",
                        "over-budget: test_new.py::test_over: at head: *64.00 MiB*"])
    found = cases(project)
    within, over = found["test_new.py::test_within"], found["test_new.py::test_over"]
    assert (within["status"], within["passed"]) == ("unpaired", True)  # test_old went in the same change
    assert (over["status"], over["passed"]) == ("over-budget", False)
    for entry, mib in ((within, 8), (over, 96)):
        fig = entry["figures"][0]
        assert fig["metric"] == "ram_tree" and fig["base"] == [] and fig["change"] is None, fig
        assert len(fig["head"]) >= 1 and min(fig["head"]) > mib << 20, fig
    assert found["test_old.py::test_old"]["status"] == "removed"


BROKEN = "\ndef not_python(:\n    pass\n"


def test_a_module_base_cannot_collect_costs_its_cases_only_and_is_named(project):
    """Before: the whole run exited 1 with nothing measured."""
    (project.path / "test_ok.py").write_text(module(case("ok", 8)))
    (project.path / "test_broken.py").write_text(module(case("broken", 8)) + BROKEN)
    commit(project.path, "base, with a syntax error in test_broken.py")
    line = module(case("broken", 8)).count("\n") + 2  # the line `def not_python(:`
    (project.path / "test_broken.py").write_text(module(case("broken", 8)))
    commit(project.path, "fix the syntax error")
    said = f"could not be collected at base: SyntaxError: * (test_broken.py, line {line})"
    judged(project, 0, [f"error at base: test_broken.py::test_broken: {said}; head judged on its budget alone",
                        "*gpu-budget against main~1: 1 error at base, 1 pass; passed*"])
    found = cases(project)
    ok, broken = found["test_ok.py::test_ok"], found["test_broken.py::test_broken"]
    assert ok["status"] == "pass" and len(ok["figures"][0]["base"]) >= 1  # measured at both sides
    assert (broken["status"], broken["passed"]) == ("error at base", True)
    assert broken["figures"][0]["head"] and broken["figures"][0]["base"] == []
    runs = json.loads((project.path / "pair.json").read_text())["runs"]
    assert all(list(r["uncollected"]) == (["test_broken.py"] if r["side"] == "base" else []) for r in runs), runs


def test_a_module_head_cannot_collect_fails_naming_it(project):
    """The other side of the same rule: each run goes on past the error, and the cases of the module fail."""
    (project.path / "test_ok.py").write_text(module(case("ok", 8)))
    (project.path / "test_later.py").write_text(module(case("later", 8)))
    commit(project.path, "base")
    (project.path / "test_later.py").write_text(module(case("later", 8)) + BROKEN)
    commit(project.path, "break test_later.py")
    judged(project, 1, [("error: test_later.py::test_later: could not be collected at head: SyntaxError: * "
                        "(test_later.py, line *)"), "*1 pass, 1 error; FAILED*"])
    assert cases(project)["test_ok.py::test_ok"]["status"] == "pass"


def test_git_sees_a_rename_not_yet_added_and_writes_nothing_to_the_repository(project):
    """A file moved with `mv` (git sees a deletion and an untracked file) is a rename, as a staged `git mv` is; neither
    the index nor the object store is written."""
    (project.path / "sub").mkdir()
    (project.path / "sub" / "test_a.py").write_text(module(case("x", 8)))
    (project.path / "test_c.py").write_text(module(case("c", 8)))
    base = commit(project.path, "base")
    (project.path / "sub" / "test_a.py").rename(project.path / "sub" / "test_b.py")
    git(project.path, "mv", "test_c.py", "test_d.py")
    gitdir = Path(git(project.path, "rev-parse", "--absolute-git-dir"))
    before = (gitdir / "index").read_bytes(), sorted((gitdir / "objects").rglob("*"))
    assert renamed_files(project.path, base) == {"sub/test_a.py": "sub/test_b.py", "test_c.py": "test_d.py"}
    assert ((gitdir / "index").read_bytes(), sorted((gitdir / "objects").rglob("*"))) == before  # nothing written
    assert "?? sub/test_b.py" in git(project.path, "status", "--porcelain")  # still untracked


def _renamed_with_growth(repo) -> None:
    """memtests/test_a.py holding 64 MiB at base; `git mv memtests gputests` and 512 MiB at head."""
    (repo / "memtests").mkdir()
    (repo / "memtests" / "test_a.py").write_text(module(case("x", 64)))
    commit(repo, "base")
    git(repo, "mv", "memtests", "gputests")
    (repo / "gputests" / "test_a.py").write_text(module(case("x", 512)))
    commit(repo, "rename memtests to gputests and hold 512 MiB")


def test_a_renamed_test_folder_named_on_the_command_line_is_run_under_its_old_name_at_base(project):
    """`git mv memtests gputests` and a growth, run as the GPU workflow names its folder (`pytest gputests`). Before:
    "gputests not at main~1 (...): no base session; every case measured at head only (new)", "1 new; passed", exit 0,
    the 8x growth unjudged."""
    _renamed_with_growth(project.path)
    out = judged(project, 1, ["*gputests/test_a.py::test_x (renamed from memtests/test_a.py)*regression*",
                              "*gpu-budget against main~1: 1 regression; FAILED*"], "gputests")
    assert "no base session" not in out and "new" not in out.split("gpu-budget against main~1:")[-1]


def test_a_run_started_inside_a_renamed_test_folder_finds_its_base_cases(project, monkeypatch):
    """`git mv memtests gputests; cd gputests; pytest --gpu-budget . --gpu-budget-against=main~1` with a growth. Before:
    ". not at main~1 (...): no base session; every case measured at head only (new)", "1 new; passed", exit 0."""
    project.makeini("[pytest]\ngpu_budget_preload =\npythonpath = .\n")  # runners.py from a sub-folder
    _renamed_with_growth(project.path)
    monkeypatch.chdir(project.path / "gputests")
    out = judged(project, 1, [("*gputests not at main~1 (*): the base session starts in memtests, the folder git sees "
                              "it renamed from"),
                              "*gputests/test_a.py::test_x (renamed from memtests/test_a.py)*regression*",
                              "*gpu-budget against main~1: 1 regression; FAILED*"], ".")
    assert "no base session" not in out


def test_a_test_folder_made_of_two_old_folders_finds_its_base_cases_from_inside_it(project, monkeypatch):
    """mem_a/test_a.py and mem_b/test_b.py moved into gputests/, test_a grown; run inside gputests with no path. Before:
    "gputests not at main~1 (...): no base session; every case measured at head only (new)", "2 new; passed"."""
    project.makeini("[pytest]\ngpu_budget_preload =\npythonpath = .\n")
    for folder, name in (("mem_a", "a"), ("mem_b", "b")):
        (project.path / folder).mkdir()
        (project.path / folder / f"test_{name}.py").write_text(module(case(name, 64)))
    commit(project.path, "base")
    (project.path / "gputests").mkdir()
    git(project.path, "mv", "mem_a/test_a.py", "mem_b/test_b.py", "gputests/")
    (project.path / "gputests" / "test_a.py").write_text(module(case("a", 512)))
    commit(project.path, "gather the memory tests in gputests, test_a holding 512 MiB")
    monkeypatch.chdir(project.path / "gputests")
    judged(project, 1, [("*gputests not at main~1 (*): the base session starts in the repository's top folder, given "
                        "the files git sees renamed into gputests: mem_a/test_a.py, mem_b/test_b.py"),
                        "*gputests/test_a.py::test_a (renamed from mem_a/test_a.py)*regression*",
                        "*gputests/test_b.py::test_b (renamed from mem_b/test_b.py)*pass*",
                        "*gpu-budget against main~1: 1 regression, 1 pass; FAILED*"])


def test_a_run_started_in_a_sub_folder_runs_the_base_there(project, monkeypatch):
    """`cd memtests; pytest --gpu-budget test_a.py --gpu-budget-against=main~1`, memtests/ at both sides. Before: the
    base session started in the worktree's top folder: "ERROR: gpu-budget against: the base session ... ended with
    exit code 4 and no report; ... ERROR: file or directory not found: test_a.py"."""
    project.makeini("[pytest]\ngpu_budget_preload =\npythonpath = .\n")
    (project.path / "memtests").mkdir()
    (project.path / "memtests" / "test_a.py").write_text(module(case("x", 64)))
    commit(project.path, "base")
    (project.path / "memtests" / "test_a.py").write_text(module(case("x", 512)))
    commit(project.path, "hold 512 MiB")
    monkeypatch.chdir(project.path / "memtests")
    judged(project, 1, ["*memtests/test_a.py::test_x*regression*", "*gpu-budget against main~1: 1 regression; FAILED*"],
           "test_a.py")


def test_test_files_moved_into_a_folder_ref_holds_pair_with_their_base_cases(project):
    """other/test_b.py moved into memtests/ (which REF holds) and grown, run as `pytest memtests`. Before: the base ran
    memtests alone: "memtests/test_b.py::test_b ... new", "memtests/test_b.py::test_same ... new", "2 pass, 2 new;
    passed", exit 0, the growth unjudged."""
    for folder, name, mib in (("memtests", "a", 8), ("other", "b", 64)):
        (project.path / folder).mkdir()
        (project.path / folder / f"test_{name}.py").write_text(module(case(name, mib), case("same", mib)))
    commit(project.path, "base")
    git(project.path, "mv", "other/test_b.py", "memtests/")
    (project.path / "memtests" / "test_b.py").write_text(module(case("b", 512), case("same", 64)))
    commit(project.path, "move test_b into memtests and hold 512 MiB")
    judged(project, 1, [("*memtests: the base session is also given the test files git sees moved into it: "
                        "other/test_b.py"),
                        "*memtests/test_b.py::test_b (renamed from other/test_b.py)*regression*",
                        "*gpu-budget against main~1: 3 pass, 1 regression; FAILED*"], "memtests")
    assert cases(project)["memtests/test_b.py::test_same"]["paired_by"] == "git"


def test_test_files_moved_into_the_ini_files_testpaths_pair_with_their_base_cases(project):
    """`testpaths = memtests` in the ini file, other/test_b.py moved into memtests/ and grown 8x, run with no path.
    Before: the base collected its testpaths alone: "memtests/test_b.py::test_b ... new", "1 pass, 1 new; passed",
    exit 0, the growth unjudged."""
    project.makeini("[pytest]\ngpu_budget_preload =\ntestpaths = memtests\npythonpath = .\n")
    for folder, name, mib in (("memtests", "a", 8), ("other", "b", 64)):
        (project.path / folder).mkdir()
        (project.path / folder / f"test_{name}.py").write_text(module(case(name, mib)))
    commit(project.path, "base")
    git(project.path, "mv", "other/test_b.py", "memtests/")
    (project.path / "memtests" / "test_b.py").write_text(module(case("b", 512)))
    commit(project.path, "move test_b into memtests and hold 512 MiB")
    judged(project, 1, [("*the ini file's testpaths (memtests) read as if named on the command line: memtests: the "
                        "base session is also given the test files git sees moved into it: other/test_b.py"),
                        "*memtests/test_b.py::test_b (renamed from other/test_b.py)*regression*",
                        "*gpu-budget against main~1: 1 pass, 1 regression; FAILED*"])
