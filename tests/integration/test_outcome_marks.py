"""A test that pytest skips, xfails or xpasses after measure(): its row says pytest's outcome beside the gate's
verdict, in the table and the JSON report, serially and under xdist (session/held.py); the verdict stays the gate's."""

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
