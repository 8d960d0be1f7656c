"""What an --gpu-budget-update session says it changed in the baseline files: a regression it accepted, and the
entries it dropped (a test deleted, a label no longer measured), serially and under xdist."""

import json

import pytest

CASES = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": MIB})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_grows(gpu_budget):
    gpu_budget.measure(S)
'''

GONE = '''

@pytest.mark.gpu_budget(ram="2 GiB")
def test_gone(gpu_budget):
    gpu_budget.measure(S)
    gpu_budget.measure(S, label="old")
'''

WORKERS = pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])


def run(pytester, workers, *args):
    return pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json", *workers, *args)


def keys(pytester) -> list[str]:
    (path,) = (pytester.path / "baselines").glob("*/test_mem.json")
    return sorted(json.loads(path.read_text())["entries"]["tiny"])


@WORKERS
def test_a_regression_the_update_accepts_says_so_below_the_table(project, workers):
    """The table's verdict is `regression` and the test passes: the line below the table says what moved and that the
    baseline was updated, as an improvement's does (it printed nothing before)."""
    run(project(CASES.replace("MIB", "8")), workers).assert_outcomes(passed=1)
    result = run(project(CASES.replace("MIB", "64")), workers, "--gpu-budget-update")
    result.assert_outcomes(passed=1)
    (line,) = [line for line in result.stdout.lines if line.startswith("test_mem.py::test_grows: ")]
    assert "> baseline" in line and line.endswith("baseline updated")


@WORKERS
def test_the_entries_an_update_drops_are_named_in_the_summary(project, workers):
    """A test deleted and a label no longer measured lose their entries: the summary names each, per file (it said
    nothing before, the file changed all the same)."""
    pytester = project(CASES.replace("MIB", "8") + GONE)
    run(pytester, workers).assert_outcomes(passed=2)
    assert keys(pytester) == ["test_mem.py::test_gone", "test_mem.py::test_gone::old", "test_mem.py::test_grows"]
    project(CASES.replace("MIB", "8") + GONE.replace(', label="old"', ', label="new"'))
    result = run(pytester, workers, "--gpu-budget-update")
    result.assert_outcomes(passed=2)
    assert keys(pytester) == ["test_mem.py::test_gone", "test_mem.py::test_gone::new", "test_mem.py::test_grows"]
    path = next((pytester.path / "baselines").glob("*/test_mem.json")).relative_to(pytester.path)
    dropped = [line for line in result.stdout.lines if line.startswith("baselines: dropped")]
    assert dropped == [(f"baselines: dropped 1 entry no longer measured (--gpu-budget-update) from {path} "
                        "(test_mem.py::test_gone::old); review the diff and commit it")]
    result = run(project(CASES.replace("MIB", "8")), workers, "--gpu-budget-update")
    result.assert_outcomes(passed=1)
    assert keys(pytester) == ["test_mem.py::test_grows"]
    dropped = [line for line in result.stdout.lines if line.startswith("baselines: dropped")]
    assert dropped == [(f"baselines: dropped 2 entries no longer measured (--gpu-budget-update) from {path} "
                        "(test_mem.py::test_gone, test_mem.py::test_gone::new); review the diff and commit it")]


def test_a_first_run_without_the_terminal_says_what_it_recorded_in_its_reports(project, monkeypatch, tmp_path):
    """Under -p no:terminal a first run wrote its baseline file and said so nowhere but each JSON row: the step summary
    now carries the terminal's "commit it" line (it showed the table's no-baseline alone before)."""
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester = project(CASES.replace("MIB", "8"))
    assert run(pytester, ["-p", "no:xdist"], "-p", "no:terminal").ret == 0
    path = next((pytester.path / "baselines").glob("*/test_mem.json")).relative_to(pytester.path)
    (row,) = json.loads((pytester.path / "r.json").read_text())["results"]
    assert row["message"].startswith("no baseline yet: recorded") and row["baseline_file"].endswith(str(path))
    assert (f"> baselines: recorded 1 new entry in {path}; commit it: under CI a case without a baseline fails"
            in summary.read_text().splitlines())


def test_an_update_says_an_entry_new_updated_or_left_unchanged(project):
    """A label-less measure() with no entry under --gpu-budget-update said "wrote 1 entry" as of one it rewrote, and
    an update whose case held printed no baselines line at all; it now says which."""
    def said(result) -> list[str]:
        return [line.split(" in ")[0] if line.startswith(("baselines: wrote", "baselines: updated"))
                else line for line in result.stdout.lines if line.startswith("baselines:")]

    pytester = project(CASES.replace("MIB", "8"))
    assert said(run(pytester, ["-p", "no:xdist"], "--gpu-budget-update")) == [
        "baselines: wrote 1 new entry (--gpu-budget-update)"]
    assert said(run(pytester, ["-p", "no:xdist"], "--gpu-budget-update")) == [
        ("baselines: left 1 entry unchanged (--gpu-budget-update): within tolerance of their baseline on the same "
         "setup, so not rewritten")]
    assert said(run(project(CASES.replace("MIB", "64")), ["-p", "no:xdist"], "--gpu-budget-update")) == [
        "baselines: updated 1 entry (--gpu-budget-update)"]
