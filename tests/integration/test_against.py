"""`--gpu-budget-against=REF` in real git repositories: a user project measured at a base commit and at the working tree.

The project holds a function case (a runner holding HOLD_MIB, a constant of runners.py) and a command case (a
script holding 16 MiB); each test commits a base, changes it, commits a head and runs pytest with --against on
the base. Every run starts real sessions (one per side, a pair more of a case it cannot tell), so each project is tiny
and each test runs one.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from git_project import PYTESTER_FILES, RUNNERS, commit, git, git_environment
from inner_session import left_after

from gpu_budget.against.worktree import checked_out, remove_abandoned, repo_at, resolve
from gpu_budget.isolate import lifecycle

SCRIPT = "import sys\nheld = b'\\x01' * (int(sys.argv[1]) << 20)\n"
HEADER = "import sys\nimport pytest\nfrom gpu_budget import Scenario\n"
FUNCTION_CASE = '''

@pytest.mark.gpu_budget(ram="2 GiB")
def test_{name}(gpu_budget):
    gpu_budget.measure(Scenario(name="{name}", run="runners:run"))
'''
COMMAND_CASE = '''

@pytest.mark.gpu_budget(ram="2 GiB")
def test_script(gpu_budget):
    gpu_budget.measure(Scenario(name="script", command=[sys.executable, "script.py", "16"]))
'''


def write(folder: Path, mib: int = 8, cases: tuple[str, ...] = ("fn", "old"), command: bool = True) -> None:
    (folder / "runners.py").write_text(RUNNERS.format(mib=mib))
    body = HEADER + "".join(FUNCTION_CASE.format(name=name) for name in cases) + (COMMAND_CASE if command else "")
    (folder / "test_mem.py").write_text(body)


@pytest.fixture
def project(pytester, monkeypatch, tmp_path_factory):
    """A git repository with the base committed (8 MiB held; cases fn, old and script); TMPDIR a folder of its own."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GPU_BUDGET_AGAINST_SIDE", raising=False)
    git_environment(monkeypatch)
    temp = tmp_path_factory.mktemp("against-tmp")
    monkeypatch.setenv("TMPDIR", str(temp))
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    (pytester.path / ".gitignore").write_text("*.json\n" + PYTESTER_FILES)
    (pytester.path / "script.py").write_text(SCRIPT)
    write(pytester.path)
    git(pytester.path, "init", "-q", "-b", "main")
    commit(pytester.path, "base")
    pytester.temp = temp
    return pytester


def against(pytester, ref: str, *more: str):
    return pytester.runpytest_subprocess("--gpu-budget", f"--gpu-budget-against={ref}", "--gpu-budget-json=pair.json",
                                         *more)


def cases(pytester) -> dict:
    return {c["nodeid"]: c for c in json.loads((pytester.path / "pair.json").read_text())["cases"]}


def assert_clean(pytester) -> None:
    """No worktree left, in git's list or on disk; no temporary folder of the run left (the gate's lock files stay)."""
    listed = git(pytester.path, "worktree", "list", "--porcelain")
    assert listed.count("worktree ") == 1, listed
    left = [p.name for p in pytester.temp.iterdir() if p.name.startswith(("gpu-budget-against-", "gpu-budget-runs-"))]
    assert left == [], left


def test_no_change_passes_and_shows_base_head_and_change(project):
    """The stored baselines (recorded by a plain run, committed) are shown beside the pair, not judged."""
    project.runpytest_subprocess("--gpu-budget", "-k", "fn").assert_outcomes(passed=1)
    (project.path / "README").write_text("a change that moves no peak\n")
    commit(project.path, "docs only, and the baseline of test_fn")
    result = against(project, "HEAD~1")
    assert result.ret == 0, result.stdout.str()
    out = result.stdout.str()
    # a side's spread is 0 B with one run, and where its runs peaked on the same page (this case's peak takes a
    # handful of values, whole pages apart, so two runs often repeat it), else a few KiB: below 1 MiB, whatever its unit
    spread = r"(0 B|[\d.]+ KiB)"
    result.stdout.re_match_lines([r".*test\s+figure\s+base\s+head\s+change\s+spread base / head\s+stored\s+verdict",
                                  (rf"test_mem\.py::test_fn\s+ram_tree\s+[\d.]+ MiB\s+[\d.]+ MiB\s+[+-][\d.]+%\s+"
                                  rf"{spread} / {spread}\s+[\d.]+ MiB\s+pass"),
                                  r".*gpu-budget against HEAD~1: 3 pass; passed"])
    assert "uncommitted" not in out
    assert "test_mem.py::test_script" in out
    assert "left running" not in out  # a side's session ends its forkserver and resource tracker itself
    report = json.loads((project.path / "pair.json").read_text())
    assert report["passed"] and report["ref"] == "HEAD~1"
    sides = [run["side"] for run in report["runs"]]
    assert sides == ["base", "head"], sides  # one each: no change lands near the limit
    assert all(run["wall_seconds"] > 0 and run["report"]["results"] for run in report["runs"])
    fn = cases(project)["test_mem.py::test_fn"]
    assert fn["status"] == "pass" and len(fn["figures"][0]["base"]) == 1
    assert 0 <= fn["figures"][0]["spread_base"] < 2**20 and 0 <= fn["figures"][0]["spread_head"] < 2**20
    assert fn["stored"]["peaks"]["ram_tree"] > 0 and cases(project)["test_mem.py::test_old"]["stored"] is None
    assert_clean(project)


def test_a_planted_change_fails_naming_the_case_and_unpaired_and_removed_cases_are_listed(project):
    write(project.path, mib=8 + 64, cases=("fn", "new"))  # +64 MiB held by the runner; test_old gone, test_new added
    commit(project.path, "hold 64 MiB more")
    summary = project.path / "summary.md"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GITHUB_STEP_SUMMARY", str(summary))
        result = against(project, "main~1")
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*test_mem.py::test_fn*ram_tree*regression*",
                                 "regression: test_mem.py::test_fn: ram_tree head * (lowest of 1) > base *"])
    found = cases(project)
    assert found["test_mem.py::test_fn"]["status"] == "regression"
    change = found["test_mem.py::test_fn"]["figures"][0]["change"]
    assert change > 0.05, change
    # test_new came as test_old went: it could be test_old renamed, so it is flagged (and passes on its budget)
    assert found["test_mem.py::test_new"]["status"] == "unpaired" and found["test_mem.py::test_new"]["passed"]
    assert "and base lost 1 case(s) in the same change that no case pairs with: test_mem.py::test_old (ram_tree" in \
        found["test_mem.py::test_new"]["message"]
    assert found["test_mem.py::test_old"]["status"] == "removed"
    assert found["test_mem.py::test_script"]["status"] == "pass"
    written = summary.read_text()  # the comparison's one summary, no session's own
    assert written.startswith("### GPU budget against `main~1`: FAILED (1 regression, 1 unpaired, 1 pass, 1 removed)")
    assert written.count("###") == 1 and "- **regression** `test_mem.py::test_fn`: ram_tree head" in written
    assert_clean(project)


def test_a_change_near_the_limit_gets_a_pair_more_of_that_case_alone(project):
    """+4 MiB held by the runner (test_fn's and test_old's) lands within half the margin of the limit (0.5 % + 4 MiB
    above base): one run a side cannot tell, so base and head each run those two cases again, the command case
    deselected; their verdicts rest on both runs a side."""
    write(project.path, mib=8 + 4)
    commit(project.path, "hold 4 MiB more")
    result = against(project, "main~1")
    result.stdout.fnmatch_lines([("*2 case(s) near their limit or spread wider than their tolerance (test_mem.py::test_fn, "
                                  "test_mem.py::test_old): a pair more of them")])
    report = json.loads((project.path / "pair.json").read_text())
    runs = [(run["side"], [row["nodeid"] for row in run["report"]["results"]]) for run in report["runs"]]
    assert [side for side, _ in runs] == ["base", "head", "base", "head"], runs
    assert all(nodeids == ["test_mem.py::test_fn", "test_mem.py::test_old"] for _, nodeids in runs[2:]), runs
    fn, script = cases(project)["test_mem.py::test_fn"], cases(project)["test_mem.py::test_script"]
    assert len(fn["figures"][0]["base"]) >= 2 and len(fn["figures"][0]["head"]) >= 2
    assert len(script["figures"][0]["base"]) == 1 and script["status"] == "pass"
    assert_clean(project)


def test_a_head_test_failing_after_measure_fails_the_case_as_the_plain_gate_does(project):
    """The head's test asserts after measure() and fails: its row passes the gate (within the tolerance of base), but
    pytest failed the test, and the plain gate exits 1 on it; so must the comparison, naming pytest's reason."""
    body = (project.path / "test_mem.py").read_text()
    checked = body.replace('    gpu_budget.measure(Scenario(name="fn", run="runners:run"))\n',
                           '    row = gpu_budget.measure(Scenario(name="fn", run="runners:run"))\n'
                           '    assert row.info.get("held") == "a figure the runner never gives"\n')
    assert checked != body
    (project.path / "test_mem.py").write_text(checked)
    commit(project.path, "check the run after measuring it")
    result = against(project, "main~1", "-k", "fn")
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*test_mem.py::test_fn*ram_tree*failed*",
                                 "failed: test_mem.py::test_fn: at head: its test failed after measure(): *assert None == *",
                                 "*gpu-budget against main~1: 1 failed; FAILED*"])
    fn = cases(project)["test_mem.py::test_fn"]
    assert (fn["status"], fn["passed"]) == ("failed", False) and not fn["figures"][0]["regressed"]
    report = json.loads((project.path / "pair.json").read_text())
    (head,) = [run["report"]["results"][0] for run in report["runs"] if run["side"] == "head"]
    (base,) = [run["report"]["results"][0] for run in report["runs"] if run["side"] == "base"]
    assert (head["passed"], head["test_outcome"], base["test_outcome"]) == (True, "failed", "passed")
    assert_clean(project)


def test_a_ref_that_is_not_there_is_named(project):
    result = against(project, "no-such-branch")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpu-budget-against=no-such-branch: no commit 'no-such-branch' in *"])
    assert_clean(project)


@pytest.mark.parametrize("given", ["ini", "-o"])
def test_a_ref_that_is_not_there_is_named_where_it_was_given(project, given):
    """`gpu_budget_against = no-such-branch` in the ini file (or -o) was blamed on --gpu-budget-against, which the
    command line did not give."""
    if given == "ini":
        project.makeini("[pytest]\ngpu_budget_preload =\ngpu_budget_against = no-such-branch\n")
        commit(project.path, "the ini file names a base")
        args, where = (), f"{project.path / 'tox.ini'}: gpu_budget_against"
    else:
        args, where = ("-o", "gpu_budget_against=no-such-branch"), "-o gpu_budget_against"
    result = project.runpytest_subprocess("--gpu-budget", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*ERROR: {where}=no-such-branch: no commit 'no-such-branch' in *"])
    assert_clean(project)


def test_outside_a_git_repository_it_says_so(pytester, monkeypatch, tmp_path_factory):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(pytester.path.parent))
    monkeypatch.delenv("GPU_BUDGET_AGAINST_SIDE", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    write(pytester.path, command=False)
    result = against(pytester, "main")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--gpu-budget-against=main: {pytester.path} is not in a git repository*"])


def test_a_test_file_missing_at_ref_is_measured_at_head_only_and_named(project):
    """A path given that REF does not hold (a new test file; memtests/ on the branch that adds it, as the GPU workflow
    names it) holds cases new at head, judged on their budgets: not a usage error. Where it is all the selection,
    no base session runs (it would collect the rest of the project); beside a path REF holds, the base runs that."""
    (project.path / "test_later.py").write_text(HEADER + FUNCTION_CASE.format(name="later"))
    commit(project.path, "a new test file")
    result = against(project, "HEAD~1", "test_later.py")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([("*against HEAD~1: test_later.py not at HEAD~1 (*): no base session; every case "
                                 "measured at head only (new)"),
                                 "*base 0 run(s)*", "*test_later.py::test_later*ram_tree*-*MiB*new*",
                                 "*gpu-budget against HEAD~1: 1 new; passed*"])
    result = against(project, "HEAD~1", "test_later.py", "test_mem.py::test_fn")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*against HEAD~1: test_later.py not at HEAD~1 (*): its cases measured at head only*",
                                 "*gpu-budget against: base run 1 (*): 1 case(s), exit 0*",
                                 "*gpu-budget against HEAD~1: 1 new, 1 pass; passed*"])
    assert set(cases(project)) == {"test_later.py::test_later", "test_mem.py::test_fn"}
    assert_clean(project)


def test_a_path_on_neither_side_is_a_usage_error_before_any_side_runs(project):
    result = against(project, "main", "test_nowhere.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpu-budget-against=main: test_nowhere.py: file or directory not found (*"])
    assert "base session" not in result.stderr.str()
    assert_clean(project)


def test_ref_at_head_with_no_change_says_so_and_measures_once(project):
    result = against(project, "main", "-k", "fn")
    assert result.ret == 0, result.stdout.str()
    said = "*gpu-budget against main: main is HEAD (*) and the working tree has no change: nothing to compare; measuring once*"
    result.stdout.fnmatch_lines([said, "*1 passed*"])
    assert "spread base / head" not in result.stdout.str()  # a plain session's table, no pair
    named = against(project, "HEAD", "-k", "fn")  # not "HEAD is HEAD"
    named.stdout.fnmatch_lines(["*gpu-budget against HEAD: it names HEAD (*) and the working tree has no change: *"])
    assert_clean(project)


def test_the_flag_needs_the_gate(project):
    result = project.runpytest_subprocess("--gpu-budget-against=main")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpu-budget-against=main needs --gpu-budget*"])


SLEEPER = '''import os, time


def run(ctx):
    with open(os.environ["PIDS"], "a") as fh:
        fh.write(f"{os.getpid()}\\n")
    time.sleep(120)
    return {}
'''


def _measuring_base(project) -> tuple[subprocess.Popen, Path]:
    """Against HEAD with a change in the working tree (head is the tree as it is), started and waited for until the
    base session's measured child runs (it sleeps); the run and the file its child's pid is in."""
    (project.path / "runners.py").write_text(SLEEPER)
    commit(project.path, "a runner that sleeps")
    (project.path / "README").write_text("uncommitted\n")
    pids = project.path / "pids.txt"
    command = [sys.executable, "-m", "pytest", "--gpu-budget", "--gpu-budget-against=HEAD", "-p", "no:randomly",
               "-k", "fn"]
    parent = subprocess.Popen(command, cwd=project.path, env={**os.environ, "PIDS": str(pids)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (pids.exists() and pids.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return parent, pids


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["ctrl-c", "sigterm", "sighup"])
def test_an_interrupted_run_removes_the_worktree_and_leaves_no_process(project, sig):
    """Stopped while base measures: the run cleans up after itself. SIGHUP (the terminal closed, an ssh session
    dropped) too: before, it ended the run at once, its worktree and folders left."""
    parent, pids = _measuring_base(project)
    try:
        assert pids.exists(), "the base session's measured child never started"
        assert git(project.path, "worktree", "list", "--porcelain").count("worktree ") == 2  # base checked out
        parent.send_signal(sig)
        out, err = parent.communicate(timeout=60)
    finally:
        if parent.poll() is None:
            parent.kill()
    assert parent.returncode == pytest.ExitCode.INTERRUPTED, out + err
    assert "interrupted" in err and "the worktree removed" in err, err
    child = int(pids.read_text().split()[0])
    assert not left_after([child], 5), f"the measured child {child} outlived the run"
    assert_clean(project)


def test_a_killed_run_takes_the_sides_case_with_it_and_the_next_removes_its_worktree(project):
    """SIGKILLed while base measures, nothing of the run cleans up; the base session and its child end with it
    (lifecycle.end_with: they watch the run that started them). Its worktree stays until the next run's
    checked_out removes the worktrees whose run is gone (remove_abandoned, called here alone)."""
    parent, pids = _measuring_base(project)
    try:
        assert pids.exists(), "the base session's measured child never started"
        parent.kill()
        parent.communicate(timeout=60)
    finally:
        if parent.poll() is None:
            parent.kill()
    child = int(pids.read_text().split()[0])
    assert not left_after([child], 15), f"the measured child {child} outlived the killed run"
    listed = git(project.path, "worktree", "list", "--porcelain")
    assert listed.count("worktree ") == 2, listed  # the killed run's, left
    removed = remove_abandoned(repo_at(project.path, "HEAD"))
    assert len(removed) == 1 and not removed[0].parent.exists(), removed
    assert git(project.path, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert_clean(project)  # its runs' reports and logs were in the worktree's folder: gone with it


def test_a_running_runs_worktree_is_not_taken_for_abandoned(project):
    repo = repo_at(project.path, "HEAD")
    with checked_out(repo, resolve(repo, "HEAD")) as tree:
        assert remove_abandoned(repo) == [] and tree.is_dir()  # its owner, this process, runs
    assert git(project.path, "worktree", "list", "--porcelain").count("worktree ") == 1


KILLED_BEFORE_ADD = """
import os, signal, sys
from pathlib import Path
from gpu_budget.against import worktree
repo = worktree.repo_at(Path(sys.argv[1]), "HEAD")
real = worktree.git
def git(args, cwd):
    if args[:2] == ["worktree", "add"]:
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would: before git made the worktree
    return real(args, cwd)
worktree.git = git
with worktree.checked_out(repo, worktree.resolve(repo, "HEAD")):
    pass
"""


def test_a_run_killed_before_its_worktree_was_added_has_its_folder_removed_by_the_next(project, monkeypatch):
    """Its folder holds the owner file only and no repository lists it, so remove_abandoned never found it: each such
    kill left one in the temporary folder for good. The next run removes it, and says so; a folder whose run is alive,
    or that has no owner file yet, is kept."""
    monkeypatch.setattr("tempfile.tempdir", str(project.temp))  # read once per process: this one's is another
    killed = subprocess.run([sys.executable, "-c", KILLED_BEFORE_ADD, str(project.path)], capture_output=True,
                            text=True, timeout=60, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    (left,) = [p for p in project.temp.iterdir() if p.name.startswith("gpu-budget-against-")]
    assert [p.name for p in left.iterdir()] == ["owner"]
    alive, unowned = project.temp / "gpu-budget-against-alive", project.temp / "gpu-budget-against-unowned"
    alive.mkdir()
    (alive / "owner").write_text(lifecycle.owner_of(os.getpid()))
    unowned.mkdir()
    said = []
    repo = repo_at(project.path, "HEAD")
    with checked_out(repo, resolve(repo, "HEAD"), said.append):
        pass
    assert not left.exists() and alive.is_dir() and unowned.is_dir()
    (line,) = said
    assert line == f"gpu-budget against: removed {left}, the folder of a run that was killed before it made its worktree"
    alive.rename(alive.with_name("kept-alive"))
    unowned.rename(unowned.with_name("kept-unowned"))
    assert_clean(project)


BROKEN = "def run(ctx):\n    raise RuntimeError('broken at this commit')\n"


def test_bisect_finds_the_commit_that_moved_a_peak_and_skips_where_the_case_cannot_run(project):
    """Eight commits after the base: the second holds 64 MiB more; the fourth and fifth break the runner (skips)."""
    planted = None
    for k in range(1, 9):
        runner = BROKEN if k in (4, 5) else RUNNERS.format(mib=8 if k < 2 else 72)
        (project.path / "runners.py").write_text(runner)
        (project.path / "README").write_text(f"commit {k}\n")
        sha = commit(project.path, f"commit {k}")
        planted = sha if k == 2 else planted
    done = subprocess.run([sys.executable, "-m", "gpu_budget", "bisect", "main~8", "main", "-k", "test_fn", "--json",
                           "bisect.json"], check=False, cwd=project.path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"first commit past the tolerance: {planted[:10]} commit 2" in done.stdout, done.stdout
    found = json.loads((project.path / "bisect.json").read_text())
    assert found["first"] == planted and found["reference"]["outcome"] == "reference"
    outcomes = {t["subject"]: t["outcome"] for t in found["tried"]}
    assert outcomes["commit 2"] == "moved" and outcomes.get("commit 1", "within") == "within", outcomes
    assert {s for s, o in outcomes.items() if o == "skip"} <= {"commit 4", "commit 5"}
    assert "skip" in outcomes.values(), outcomes  # a midpoint of eight was broken: skipped, not judged
    assert all(t["value"] for t in found["tried"] if t["outcome"] != "skip")
    assert len(found["tried"]) <= 6, found["tried"]
    assert git(project.path, "rev-parse", "HEAD") == git(project.path, "rev-parse", "main")  # checkout untouched
    assert not (project.path / ".git" / "BISECT_LOG").exists()
    assert_clean(project)


def test_bisect_names_a_bad_good_or_bad(project):
    def bisect(*args):
        return subprocess.run([sys.executable, "-m", "gpu_budget", "bisect", *args], check=False, cwd=project.path,
                              capture_output=True, text=True, timeout=60)

    done = bisect("nope", "main", "-k", "test_fn")
    assert done.returncode == 2 and "GOOD=nope: no commit 'nope' in " in done.stderr, done.stderr
    (project.path / "README").write_text("later\n")
    commit(project.path, "later")
    done = bisect("main", "main~1", "-k", "test_fn")
    assert done.returncode == 2 and "comes after BAD main~1" in done.stderr, done.stderr
    assert_clean(project)
