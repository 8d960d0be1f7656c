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


SKIPPED = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="1 MiB")
def test_caught_and_skipped(gpu_budget):
    try:
        gpu_budget.measure(S)
    except BaseException:
        pytest.skip("the runner is too small")
'''


def test_a_caught_failing_verdict_turned_into_a_skip_errors_its_test(project, tmp_path, monkeypatch):
    """A skip hides the gate's failure as a pass does: before, the session exited 0, pytest said "1 skipped", and the
    step summary "1 measured, 1 failed"."""
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    pytester = project(SKIPPED)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "-p", "no:xdist")
    result.assert_outcomes(skipped=1, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([("*test_mem.py::test_caught_and_skipped: skipped though the gate failed its case "
                                  "test_mem.py::test_caught_and_skipped (over-budget): the test caught measure()'s "
                                  "failure*")])
    assert (tmp_path / "summary.md").read_text().startswith("### GPU budget: 1 measured, 1 failed on ")
