"""A memory-budget test that passes without measuring anything fails, naming the test (session/unmeasured.py): it
carries the gpu_budget marker or asks for the fixture, so a green result reads as a gated case. Before, such a test
(a measure() call lost in a refactor, a marker on a test without the fixture) passed with no row, and the gate's
fail-safe said nothing while any other test had measured."""

import json

import pytest
from inner_session import leave_outer_run

HALF_DECLARED = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_measured(gpu_budget):
    gpu_budget.measure(S)

@pytest.mark.gpu_budget(ram="2 GiB")
def test_forgot_the_call(gpu_budget):
    assert gpu_budget.scale == "tiny"

@pytest.mark.gpu_budget(ram="2 GiB")
def test_no_fixture():
    pass

def test_probed(gpu_budget):
    assert gpu_budget.peak(S).ok

@pytest.fixture
def measured_after(gpu_budget):
    yield
    gpu_budget.measure(S)

@pytest.mark.gpu_budget(ram="2 GiB")
def test_measured_in_teardown(measured_after):
    pass

@pytest.mark.gpu_budget(ram="2 GiB")
def test_skipped(gpu_budget):
    pytest.skip("not on this host")

def test_plain():
    pass
'''


def test_a_budget_test_that_measured_nothing_is_an_error_naming_it(project):
    pytester = project(HALF_DECLARED)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "-rA")
    result.assert_outcomes(passed=6, skipped=1, errors=2)
    said = ("*test_mem.py::{}: a memory-budget test (gpu_budget marker or fixture) that measured nothing: call "
            "gpu_budget.measure(scenario) (or peak() in a probe), skip it with the reason, or drop the marker*")
    result.stdout.fnmatch_lines([said.format("test_forgot_the_call"), said.format("test_no_fixture")], consecutive=False)
    errors = [line for line in result.stdout.lines if line.startswith("ERROR ")]
    assert sorted(e.split()[1] for e in errors) == ["test_mem.py::test_forgot_the_call", "test_mem.py::test_no_fixture"]


def test_without_the_gate_such_a_test_is_skipped_as_before(project):
    project(HALF_DECLARED).runpytest_subprocess("-p", "no:randomly").assert_outcomes(passed=1, skipped=6)


BROKEN_BEFORE = '''
@pytest.mark.gpu_budget(ram="2 GiB")
def test_measured(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 8}))

@pytest.mark.gpu_budget(ram="2 GiB")
def test_broken_before(gpu_budget):
    raise RuntimeError("dataset download failed")

@pytest.mark.gpu_budget(ram="2 GiB")
def test_measured_then_broken(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 8}))
    raise RuntimeError("after")

def test_plain_broken():
    raise RuntimeError("not a budget test")
'''


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_budget_test_that_failed_without_a_row_is_named_in_the_report_and_the_step_summary(project, monkeypatch,
                                                                                             xdist):
    """The table, the JSON report and the step summary held the two measured rows alone, with no trace of the budget
    test that failed before it measured; a test failing after measure() has its row, a plain test is not the gate's."""
    pytester = project(BROKEN_BEFORE)
    leave_outer_run(monkeypatch)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "summary.md"))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", *xdist, "--gpu-budget",
                                           "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1, failed=3)
    said = ("1 memory-budget test(s) failed without a row in the table: test_mem.py::test_broken_before "
            "(RuntimeError: dataset download failed)")
    assert json.loads((pytester.path / "r.json").read_text())["gate_problems"] == [said]
    assert f"> **Gate failed:** {said}" in (pytester.path / "summary.md").read_text()
    result.stdout.fnmatch_lines([f"gpu-budget gate FAILED: {said}"])


MARKED_BY_A_HOOK = '''
import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if item.name.startswith("test_marked"):
            item.add_marker(pytest.mark.gpu_budget(ram="2 GiB"))
'''

HOOK_MARKED = '''
def test_marked_broken():
    raise RuntimeError("dataset download failed")

def test_plain():
    pass
'''


def test_a_test_a_hook_marks_after_collection_is_a_budget_test_too(project):
    """A conftest's pytest_collection_modifyitems runs after the gate's (tryfirst) noting of the budget tests: the test
    it marked ran without --gpu-budget instead of being skipped, and with it, failing before measuring, it was not
    named as a budget test that failed without a row."""
    pytester = project(HOOK_MARKED)
    pytester.makeconftest(MARKED_BY_A_HOOK)
    pytester.runpytest_subprocess("-p", "no:randomly").assert_outcomes(passed=1, skipped=1)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")
    result.assert_outcomes(passed=1, failed=1)
    said = ("*1 memory-budget test(s) failed without a row in the table: test_mem.py::test_marked_broken "
            "(RuntimeError: dataset download failed)*")
    result.stdout.fnmatch_lines([said])
