"""A test that catches measure()'s failure (a bare `except:`, `except BaseException:`) and passes errors at its
teardown, naming the case (session/caught.py): before, the table said "over-budget FAIL" while pytest counted the
test passed and the session exited 0."""

import pytest

CASES = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="1 MiB")
def test_caught(gpu_budget):
    try:
        gpu_budget.measure(S)
    except BaseException:
        pass

@pytest.mark.gpu_budget(ram="1 MiB", expect="over-budget")
def test_reproduced(gpu_budget):
    gpu_budget.measure(S)

@pytest.mark.gpu_budget(ram="2 GiB")
def test_fine(gpu_budget):
    gpu_budget.measure(S)
'''


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_caught_failing_verdict_errors_its_test(project, workers):
    pytester = project(CASES)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", *workers)
    result.assert_outcomes(passed=3, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([("*test_mem.py::test_caught: passed though the gate failed its case test_mem.py::"
                                  "test_caught (over-budget): the test caught measure()'s failure*")])
