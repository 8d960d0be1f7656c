"""`-m gpu_budget` selects every memory-budget test, and `-m "not gpu_budget"` none: a test that measures through the
gpu_budget fixture alone (no marker: no budget, gated on its baseline) is one too, and is selected as one."""

CASES = '''
def test_fixture_only(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 1}))


@pytest.mark.gpu_budget(ram="2 GiB")
def test_marked(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 1}))


def test_plain():
    pass
'''


def run(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "-p", "no:cacheprovider", "-rA", *args)


def test_a_marker_expression_selects_a_test_that_measures_through_the_fixture_alone(project):
    """Before: `-m gpu_budget` deselected test_fixture_only, and `-m "not gpu_budget"` (the fast job of a suite split in
    two) selected it, where it was skipped for want of --gpu-budget: measured in neither job, and both passed."""
    pytester = project(CASES)
    result = run(pytester, "--gpu-budget", "-m", "gpu_budget")
    result.assert_outcomes(passed=2, deselected=1)
    result.stdout.fnmatch_lines(["PASSED test_mem.py::test_fixture_only", "PASSED test_mem.py::test_marked"])
    result = run(pytester, "-m", "not gpu_budget")
    result.assert_outcomes(passed=1, deselected=2)
    result.stdout.fnmatch_lines(["PASSED test_mem.py::test_plain"])
