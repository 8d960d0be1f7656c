"""A test that fails after measure() records no baseline, serially and under xdist, with --gpu-budget-update too.

docs/declaring.md's pattern, `row = gpu_budget.measure(S)` then `assert row.info[...]`, judges the case before the
test's own assertion runs; the entry it would record is written only once the test has passed (session/held.py).
"""

import json
import re

import pytest
from inner_session import rows

CASES = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": MIB})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_fails_after(gpu_budget):
    row = gpu_budget.measure(S)
    assert row.info["held"] > HELD_ABOVE  # the test's own check of its run, after the verdict

@pytest.mark.gpu_budget(ram="2 GiB")
def test_passes(gpu_budget):
    gpu_budget.measure(S)
'''


def cases(mib: int, fail: bool) -> str:
    return CASES.replace("MIB", str(mib)).replace("HELD_ABOVE", str(1 << 40 if fail else 0))


def entries(pytester) -> dict:
    (path,) = (pytester.path / "baselines").glob("*/test_mem.json")
    return json.loads(path.read_text())["entries"]["tiny"]


def baselines_lines(result) -> list[str]:
    return [line for line in result.stdout.lines if line.startswith("baselines:")]


def run(pytester, workers, *args):
    return pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json", *workers, *args)


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_test_failing_after_measure_records_nothing_and_its_sibling_records(project, workers):
    pytester = project(cases(8, fail=True))
    result = run(pytester, workers)
    result.assert_outcomes(failed=1, passed=1)
    assert list(entries(pytester)) == ["test_mem.py::test_passes"]
    path = next((pytester.path / "baselines").glob("*/test_mem.json")).relative_to(pytester.path)
    assert baselines_lines(result) == [
        f"baselines: recorded 1 new entry in {path}; commit it: under CI a case without a baseline fails",
        ("baselines: 1 entry not recorded, its test did not pass after measuring (test_mem.py::test_fails_after): "
         "only a passing test records its baseline")]
    row = rows(pytester)["test_fails_after"]
    assert row["verdict"] == "no-baseline"  # the case itself was fine: its test failed on its own check
    assert row["message"].startswith("no baseline yet: its test did not pass, so no baseline entry was written")
    assert rows(pytester)["test_passes"]["message"].startswith("no baseline yet: recorded")


XFAIL = '''

@pytest.mark.gpu_budget(ram="2 GiB")
@pytest.mark.xfail(reason="known")
def test_xfails_after(gpu_budget):
    gpu_budget.measure(S)
    assert False
'''


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_test_failing_after_measure_is_a_failure_in_every_report(project, workers, tmp_path, monkeypatch):
    """Its row passed the gate (its `passed` is the gate's word), but pytest failed the test: the row records pytest's
    outcome, the table's verdict says "test FAILED" with the reason below it, and the step summary counts it among
    the failed as pytest does; an xfail is what pytest says it is (xfailed)."""
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester = project(cases(8, fail=True) + XFAIL)
    result = run(pytester, workers)
    result.assert_outcomes(failed=1, passed=1, xfailed=1)
    found = rows(pytester)
    after, passes, xfails = found["test_fails_after"], found["test_passes"], found["test_xfails_after"]
    assert (after["verdict"], after["passed"], after["test_outcome"]) == ("no-baseline", True, "failed")
    assert after["test_failure"].startswith("assert ") and " > " in after["test_failure"]
    assert (passes["test_outcome"], xfails["test_outcome"]) == ("passed", "xfailed")
    assert "test_failure" not in passes and "test_failure" not in xfails
    result.stdout.re_match_lines([r"test_mem\.py::test_fails_after\s+tiny .* no-baseline, test FAILED$",
                                  r"test_mem\.py::test_passes\s+tiny .* no-baseline$"])
    result.stdout.fnmatch_lines(["test_mem.py::test_fails_after: its test failed after measure(): assert *"])
    written = summary.read_text()
    assert written.startswith("### GPU budget: 3 measured, 1 failed on ")
    assert re.search(r"\| no-baseline, test FAILED +\|", written)  # padded to the xfail's "no-baseline, test xfailed"
    assert "- **test_mem.py::test_fails_after**: its test failed after measure(): assert " in written


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])
def test_an_update_from_a_failing_test_leaves_its_stored_entry(project, workers):
    pytester = project(cases(8, fail=False))
    run(pytester, workers).assert_outcomes(passed=2)
    before = entries(pytester)
    project(cases(40, fail=True))  # 32 MiB more held: an update would rewrite both entries
    result = run(pytester, workers, "--gpu-budget-update")
    result.assert_outcomes(failed=1, passed=1)
    after = entries(pytester)
    assert after["test_mem.py::test_fails_after"] == before["test_mem.py::test_fails_after"]
    assert after["test_mem.py::test_passes"]["peaks"]["ram"] > before["test_mem.py::test_passes"]["peaks"]["ram"]
    assert [line.split(" in ")[0] for line in baselines_lines(result)] == [
        "baselines: updated 1 entry (--gpu-budget-update)",
        ("baselines: 1 entry not written, its test did not pass after measuring (test_mem.py::test_fails_after): "
         "only a passing test records its baseline")]
    withheld = rows(pytester)["test_fails_after"]  # a regression under the update: its row says what was written
    assert withheld["verdict"] == "regression" and withheld["passed"]
    assert withheld["message"].endswith("; its test did not pass, so no baseline entry was written")
    assert "baseline updated" not in withheld["message"]
    assert rows(pytester)["test_passes"]["message"].endswith("; baseline updated")


def test_a_write_that_fails_as_the_test_reports_fails_the_gate_naming_the_file(project, pytester):
    """Serially the entry is written as the test reports (a hook, not the test): a failing write is the gate's
    failure, as on an xdist controller, not an internal error of pytest's."""
    pytester.makeconftest('''
        import gpu_budget.judge.files

        def _full(*args, **kwargs):
            raise OSError("no space left on device (planted)")

        gpu_budget.judge.files.write = _full
    ''')
    project(cases(8, fail=False))
    result = run(pytester, ["-p", "no:xdist"])
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED and "INTERNALERROR" not in result.stdout.str()
    result.stdout.fnmatch_lines([("*gpu-budget gate FAILED: could not write baselines to *test_mem.json: "
                                  "no space left on device (planted)*")])
    assert baselines_lines(result) == []


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_write_that_fails_says_so_in_its_rows_and_names_its_file_once(project, workers):
    """A folder where the baseline file's lock should be: nothing is recorded, so no row may say it was, and the gate names
    the file once, not once per entry. Before, each row read "no baseline yet: recorded" and, serially, the gate
    listed "could not write baselines to .../test_mem.json: ..." once per entry."""
    pytester = project(cases(8, fail=False))
    run(pytester, ["-p", "no:xdist"]).assert_outcomes(passed=2)  # records both: where this hardware's file lies
    (path,) = (pytester.path / "baselines").glob("*/test_mem.json")
    path.unlink()
    (path.parent / f".{path.name}.lock").mkdir()
    result = run(pytester, workers)
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    gate = [line for line in result.stdout.lines if line.startswith("gpu-budget gate FAILED: could not write")]
    assert len(gate) == 1 and gate[0].endswith(".test_mem.json.lock' (2 entries not written)"), gate
    (stop,) = [line for line in result.stdout.lines if line.startswith("! gpu-budget gate failed:")]
    assert stop.count("could not write baselines to") == 1, stop
    for name in ("test_fails_after", "test_passes"):
        message = rows(pytester)[name]["message"]
        assert message.startswith("no baseline yet: not recorded, the write failed ([Errno 21] Is a directory: "), \
            message
        assert "no baseline yet: recorded" not in message, message
    assert baselines_lines(result) == []


TEARDOWN = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.fixture
def output_checked():
    yield
    raise AssertionError("the run wrote no checkpoint")  # a fixture's check of the run, after the test's call

@pytest.mark.gpu_budget(ram="2 GiB")
def test_checked_at_teardown(gpu_budget, output_checked):
    gpu_budget.measure(S)
'''


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_test_whose_teardown_fails_after_measure_records_nothing_and_its_row_says_why(project, workers, tmp_path,
                                                                                      monkeypatch):
    """pytest reports the test an error at its teardown: its run is as broken as one failing its own assertion. Before,
    the entry was written at the call's report, and the row said "no baseline yet: recorded", its test_outcome
    "passed", the step summary "1 measured, 0 failed"; then its row said "failed" ("test FAILED") where pytest said
    "error": the row uses pytest's word."""
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester = project(TEARDOWN)
    result = run(pytester, workers)
    result.assert_outcomes(passed=1, errors=1)
    assert not list((pytester.path / "baselines").glob("*/test_mem.json"))
    row = rows(pytester)["test_checked_at_teardown"]
    assert (row["verdict"], row["passed"], row["test_outcome"]) == ("no-baseline", True, "error"), row
    assert row["test_failure"] == "AssertionError: the run wrote no checkpoint"
    assert row["message"].startswith("no baseline yet: its test did not pass, so no baseline entry was written")
    result.stdout.re_match_lines([r"test_mem\.py::test_checked_at_teardown\s+tiny .* no-baseline, test ERROR$"])
    said = "test_mem.py::test_checked_at_teardown: its test had an error after measure(): AssertionError: the run wrote"
    result.stdout.fnmatch_lines([f"{said} no checkpoint"])
    assert summary.read_text().startswith("### GPU budget: 1 measured, 1 failed on ")
