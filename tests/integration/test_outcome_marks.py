"""A test that pytest skips, xfails or xpasses after measure(): its row says pytest's outcome beside the gate's
verdict, in the table and the JSON report, serially and under xdist (session/held.py); the verdict stays the gate's."""

import json

import pytest
from inner_session import rows

CASES = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_skips_after(gpu_budget):
    gpu_budget.measure(S)
    pytest.skip("not today")

@pytest.mark.gpu_budget(ram="2 GiB")
@pytest.mark.xfail(reason="known")
def test_xfails_after(gpu_budget):
    gpu_budget.measure(S)
    assert False

@pytest.mark.gpu_budget(ram="1 MiB")
@pytest.mark.xfail(reason="known to break its budget")
def test_xfails_on_its_budget(gpu_budget):
    gpu_budget.measure(S)

@pytest.mark.gpu_budget(ram="2 GiB")
@pytest.mark.xfail(reason="fixed since")
def test_xpasses(gpu_budget):
    gpu_budget.measure(S)

@pytest.mark.gpu_budget(ram="2 GiB")
def test_passes(gpu_budget):
    gpu_budget.measure(S)
'''


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_skip_or_xfail_after_measure_marks_its_row_with_pytests_outcome(project, workers):
    pytester = project(CASES)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json", *workers)
    result.assert_outcomes(passed=1, skipped=1, xfailed=2, xpassed=1)
    found = {name: (row["verdict"], row["passed"], row["test_outcome"]) for name, row in rows(pytester).items()}
    assert found == {"test_skips_after": ("no-baseline", True, "skipped"),
                     "test_xfails_after": ("no-baseline", True, "xfailed"),
                     "test_xfails_on_its_budget": ("over-budget", False, "xfailed"),
                     "test_xpasses": ("no-baseline", True, "xpassed"),
                     "test_passes": ("no-baseline", True, "passed")}
    result.stdout.re_match_lines([r"test_mem\.py::test_skips_after\s+tiny .* no-baseline, test skipped$",
                                  r"test_mem\.py::test_xfails_after\s+tiny .* no-baseline, test xfailed$",
                                  r"test_mem\.py::test_xfails_on_its_budget\s+tiny .* over-budget FAIL, test xfailed$",
                                  r"test_mem\.py::test_xpasses\s+tiny .* no-baseline, test xpassed$",
                                  r"test_mem\.py::test_passes\s+tiny .* no-baseline$"], consecutive=False)


SAME_NAMED = '''
import json

import pytest
from gpu_budget import Scenario

S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_case(gpu_budget):
    gpu_budget.measure(S)
    OUTCOME
'''

PARAMS = '''
import json

import pytest
from gpu_budget import Scenario

S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
@pytest.mark.parametrize("x", ["a", "b::c"])
def test_p(gpu_budget, x):
    gpu_budget.measure(S, label="one")
    gpu_budget.measure(S, label="two")
    if x == "a":
        pytest.skip("not a")
'''


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])
def test_each_row_gets_its_own_tests_outcome_across_files_and_params(project, workers):
    """Same-named tests in two files, parametrized ids (one holding '::') and labelled cases: each row takes its own
    test's outcome, never a namesake's."""
    pytester = project("")
    pytester.makepyfile(test_one=SAME_NAMED.replace("OUTCOME", "assert False, 'its own check'"),
                        test_two=SAME_NAMED.replace("OUTCOME", "pass"), test_params=PARAMS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json", *workers)
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    found = {row["nodeid"]: row["test_outcome"]
             for row in json.loads((pytester.path / "r.json").read_text())["results"]}
    assert found == {"test_one.py::test_case": "failed", "test_two.py::test_case": "passed",
                     "test_params.py::test_p[a]::one": "skipped", "test_params.py::test_p[a]::two": "skipped",
                     "test_params.py::test_p[b::c]::one": "passed", "test_params.py::test_p[b::c]::two": "passed"}


def test_the_step_summary_counts_an_xfailed_tests_failing_row_as_an_expected_failure(project, monkeypatch):
    """pytest xfails the test whose case broke its budget and the session exits 0: the step summary's heading agrees
    (not among the failed, counted as an expected failure), while its row and its line keep the gate's verdict."""
    pytester = project(CASES)
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget")
    result.assert_outcomes(passed=1, skipped=1, xfailed=2, xpassed=1)
    assert result.ret == 0
    lines = summary.read_text().splitlines()
    assert lines[0].startswith("### GPU budget: 5 measured, 0 failed, 1 xfailed (expected failure) on `cpu-")
    row = next(line for line in lines if line.startswith("| test_mem.py::test_xfails_on_its_budget "))
    assert row.rstrip(" |").endswith("over-budget FAIL, test xfailed")
    said = [line for line in lines if line.startswith("- **")]
    assert len(said) == 1 and said[0].startswith("- **test_mem.py::test_xfails_on_its_budget** (expected failure: "
                                                 "its test xfailed): ")
    assert said[0].endswith("> budget 1.00 MiB")
