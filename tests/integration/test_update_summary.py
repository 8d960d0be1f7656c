"""What an --gpu-budget-update session says it changed in the baseline files: a regression it accepted, serially
and under xdist."""

import pytest

CASES = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": MIB})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_grows(gpu_budget):
    gpu_budget.measure(S)
'''

WORKERS = pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])


def run(pytester, workers, *args):
    return pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json", *workers, *args)


@WORKERS
def test_a_regression_the_update_accepts_says_so_below_the_table(project, workers):
    """The table's verdict is `regression` and the test passes: the line below the table says what moved and that the
    baseline was updated, as an improvement's does (it printed nothing before)."""
    run(project(CASES.replace("MIB", "8")), workers).assert_outcomes(passed=1)
    result = run(project(CASES.replace("MIB", "64")), workers, "--gpu-budget-update")
    result.assert_outcomes(passed=1)
    (line,) = [line for line in result.stdout.lines if line.startswith("test_mem.py::test_grows: ")]
    assert "> baseline" in line and line.endswith("baseline updated")

