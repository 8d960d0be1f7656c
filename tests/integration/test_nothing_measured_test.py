"""A memory-budget test that passes without measuring anything fails, naming the test (session/unmeasured.py): it
carries the gpu_budget marker or asks for the fixture, so a green result reads as a gated case. Before, such a test
(a measure() call lost in a refactor, a marker on a test without the fixture) passed with no row, and the gate's
fail-safe said nothing while any other test had measured."""

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
