"""A marker's mistakes, end to end: a bare-number budget and an unknown keyword fail their test with a message that
names the test and the fix, not 4 bytes nor a raw TypeError (declare/marks.py)."""


def case(name: str, marker: str) -> str:
    """A test module's test `name` under `@pytest.mark.gpu_budget(<marker>)`, measuring a small allocation."""
    return f"""
@pytest.mark.gpu_budget({marker})
def {name}(gpu_budget):
    gpu_budget.measure(Scenario(name="a", run="runners:alloc", params={{"mib": 8}}))
"""


def run(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", *args)


def test_a_bare_number_budget_fails_its_test_asking_for_a_unit(project):
    pytester = project(case("test_bare", "ram=4") + case("test_fine", 'ram="2 GiB"'))
    result = run(pytester)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(['*test_mem.py::test_bare: ram budget 4 is a bare number: give it a unit, e.g. "4 GiB"*'])
    assert "budget 4 B" not in result.stdout.str()


def test_an_unknown_keyword_fails_its_test_naming_the_valid_ones(project):
    pytester = project(case("test_typo", 'rams="4 GiB"'))
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([("*test_mem.py::test_typo: gpu_budget marker has an unknown keyword 'rams' (did you "
                                  "mean 'ram'?); its keywords are ram, vram, tolerance, *")])
    assert "TypeError" not in result.stdout.str()


def test_a_tolerance_that_is_not_one_fails_its_test_naming_the_value(project):
    pytester = project(case("test_number", 'ram="2 GiB", tolerance=0.02') + case("test_bare_abs", 'ram="2 GiB", tolerance={"abs": 16}'))
    result = run(pytester)
    result.assert_outcomes(failed=2)
    number = "*test_mem.py::test_number: tolerance must be a mapping of rel, abs (e.g. {'rel': 0.02, 'abs': '16 MiB'}: *; got 0.02 *"
    bare = '*test_mem.py::test_bare_abs: tolerance abs 16 is a bare number: give it a unit, e.g. "16 MiB"*'
    result.stdout.fnmatch_lines([number, bare], consecutive=False)
    assert "TypeError" not in result.stdout.str()


def test_a_marker_mistake_is_its_message_alone_not_a_traceback_into_the_gate(project):
    """A VRAM budget above the card it runs as on (a budget no run under the card's cap can reach) and a budget with no
    unit are the user's input, not the gate's bug: the failure is the message naming the values, with no traceback
    through the gate's own code (declare/marks.py, session.py) for the user to read past."""
    pytester = project(case("test_above_the_card", 'vram="30 GiB", card="RTX 3090"') + case("test_bare", 'ram="4"'))
    result = run(pytester)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "_* test_above_the_card _*",
        ("test_mem.py::test_above_the_card: vram budget '30 GiB' (30.00 GiB) at scale 'tiny' is above the card it "
         "runs as on, RTX 3090 (23.69 GiB): *"),
        "_* test_bare _*",
        "test_mem.py::test_bare: ram budget '4' is a bare number: give it a unit, e.g. \"4 GiB\"",
        "=* gpu-budget =*"], consecutive=True)  # nothing between the header and the message
    out = result.stdout.str()
    assert "declare/marks.py" not in out and "ValueError" not in out and "exception" not in out, out
