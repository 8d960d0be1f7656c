"""measure()'s own arguments are checked as the marker's are: an expectation that is none of the known ones, or a
label that is no string, fails the test naming the value (session/session.py refuse_unmeasurable). Before, a typo in
measure(expect=...) was dropped: the case was judged as an ordinary one, so a reproduction that no longer broke its
budget passed instead of failing as lost."""


def run(pytester):
    return pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")


def shown_at(call: str, error: str, kind: str) -> list[str]:
    """What pytest shows of a refusal at the test's own line: the call, the error, the test file's line."""
    return [f">       {call}", "*", f"E       {error}", "", f"test_mem.py:*: {kind}"]


def failed_at(call: str, message: str) -> list[str]:
    """What pytest shows of a test the gate failed at its own line (refusal.refuse): the call and the message."""
    return [f">       {call}", f"E       Failed: {message}", "", "test_mem.py:*: Failed"]


TYPO = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_typo(gpu_budget):
    gpu_budget.measure(S, expect="over_budget")
'''  # a misspelt expectation, refused


def test_a_misspelt_expectation_fails_its_test_naming_the_value(project):
    pytester = project(TYPO + '''
@pytest.mark.gpu_budget(ram="2 GiB")
def test_spelt(gpu_budget):
    gpu_budget.measure(S, label="a", expect="over-budget")
''')
    result = run(pytester)
    result.assert_outcomes(failed=2)  # within 2 GiB: the spelt one lost its reproduction; the typo is refused
    typo = "*test_mem.py::test_typo: measure() expect='over_budget' is not one of ('over-budget',)*"
    result.stdout.fnmatch_lines([typo, "*test_spelt*the reproduction is lost*"], consecutive=False)


def test_a_label_that_is_no_string_fails_its_test_naming_it(project):
    pytester = project('''
@pytest.mark.gpu_budget(ram="2 GiB")
def test_number(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 8}), label=5)
''')
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_mem.py::test_number: measure() label=5 is not a string*"])
    assert not list(pytester.path.glob("baselines/*/test_mem.json"))  # nothing measured, nothing recorded


def test_a_label_with_a_line_break_or_outer_spaces_fails_its_test_naming_it(project):
    """A label names the case's row and entry: "x\\ny" broke the table's row in two, and " " and "  " gave two rows
    that read alike ("test_space::"); "" was taken for no label, unsaid."""
    pytester = project('''
@pytest.mark.gpu_budget(ram="2 GiB")
def test_newline(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 8}), label="x\\ny")

@pytest.mark.gpu_budget(ram="2 GiB")
def test_space(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 8}), label=" ")

@pytest.mark.gpu_budget(ram="2 GiB")
def test_empty(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 8}), label="")
''')
    result = run(pytester)
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([(r"*test_mem.py::test_newline: measure() label='x\ny' is not one line of text with "
                                  "no space at either end*"),
                                 "*test_mem.py::test_space: measure() label=' ' is not one line of text*",
                                 "*test_mem.py::test_empty: measure() label='' is not one line of text*"],
                                consecutive=False)
    assert not list(pytester.path.glob("baselines/*/test_mem.json"))


def test_a_refused_argument_shows_at_the_tests_own_line_not_in_the_gates_code(project):
    """A bad argument is the user's input, as a bad marker is: the failure is the test's line that made the call and
    the message naming the argument and the value, with no traceback through the gate's own code (fixture.py,
    session.py) to read past. Before, each showed the gate's frames down to the raise in session.py."""
    pytester = project(TYPO + '''
@pytest.mark.gpu_budget(ram="2 GiB")
def test_name(gpu_budget):
    gpu_budget.measure("alloc")

@pytest.mark.gpu_budget(ram="2 GiB")
def test_note(gpu_budget):
    gpu_budget.note(S, "a set", values={1, 2})
''')
    result = run(pytester)
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([
        "_* test_typo _*", "", "gpu_budget = *", "", '    @pytest.mark.gpu_budget(ram="2 GiB")', "    def test_typo(gpu_budget):",
        *failed_at('gpu_budget.measure(S, expect="over_budget")',
                   "test_mem.py::test_typo: measure() expect='over_budget' is not one of ('over-budget',) *"),
        "_* test_name _*", "", "gpu_budget = *", "", '    @pytest.mark.gpu_budget(ram="2 GiB")', "    def test_name(gpu_budget):",
        *failed_at('gpu_budget.measure("alloc")',
                   "test_mem.py::test_name: measure() takes a gpu_budget.Scenario, got 'alloc'"),
        "_* test_note _*", "", "gpu_budget = *", "", '    @pytest.mark.gpu_budget(ram="2 GiB")', "    def test_note(gpu_budget):",
        *failed_at('gpu_budget.note(S, "a set", values={1, 2})',
                   "test_mem.py::test_note: gpu_budget.note() data must be JSON-able: *set*")], consecutive=True)
    out = result.stdout.str()
    assert not any(name in out for name in ("session.py", "fixture.py", "refusal.py", "TypeError", "ValueError")), out


def test_a_refused_explore_argument_names_it_at_the_tests_own_line(project):
    """explore()'s arguments are checked before any run, as measure()'s are: a budget that is no size, a boundary
    that is no knob, a knob the scenario does not have and a real-run cap below one each fail at the test's line,
    naming the argument and the value. Before, each was a traceback through the gate's search code
    (search/explore.py), and a bad budget's message did not say it was the budget; a bare-number budget is refused
    as a marker's is (it was read as bytes), and seed=True (True is an int) was the seed 1."""
    pytester = project('''
from gpu_budget.search.explore import Envelope

S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})
MIB = Envelope({"mib": (1, 8)})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_budget(gpu_budget):
    gpu_budget.explore(S, MIB, budget="1 GiBs")

@pytest.mark.gpu_budget(ram="2 GiB")
def test_boundary(gpu_budget):
    gpu_budget.explore(S, MIB, boundary="mb")

@pytest.mark.gpu_budget(ram="2 GiB")
def test_knob(gpu_budget):
    gpu_budget.explore(S, Envelope({"batch": (1, 8)}))

@pytest.mark.gpu_budget(ram="2 GiB")
def test_runs(gpu_budget):
    gpu_budget.explore(S, MIB, max_real_runs=0)

@pytest.mark.gpu_budget(ram="2 GiB")
def test_bare(gpu_budget):
    gpu_budget.explore(S, MIB, budget={"tiny": "4"})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_seed(gpu_budget):
    gpu_budget.explore(S, MIB, seed=True)
''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-explore")
    result.assert_outcomes(failed=6)
    result.stdout.fnmatch_lines([
        *failed_at('gpu_budget.explore(S, MIB, budget="1 GiBs")',
                   "test_mem.py::test_budget: explore() budget='1 GiBs': unknown unit 'GiBs' *"),
        *failed_at('gpu_budget.explore(S, MIB, boundary="mb")',
                   "test_mem.py::test_boundary: explore() boundary='mb' is not a knob of the envelope *"),
        '>       gpu_budget.explore(S, Envelope({"batch": (1, 8)}))',
        "E       Failed: test_mem.py::test_knob: explore() envelope knob 'batch' is not a param of scenario 'alloc' *",
        "", "test_mem.py:*: Failed",
        *failed_at("gpu_budget.explore(S, MIB, max_real_runs=0)",
                   "test_mem.py::test_runs: explore() max_real_runs=0: expected a whole number >= 1"),
        # read as 4 bytes before, while a marker's ram="4" is refused
        '>       gpu_budget.explore(S, MIB, budget={"tiny": "4"})',
        ("E       Failed: test_mem.py::test_bare: explore() budget '4' at scale 'tiny' is a bare number: give it a "
         'unit, e.g. "4 GiB"'), "", "test_mem.py:*: Failed",
        # seed=True ran as Hypothesis' seed 1, unsaid
        *failed_at("gpu_budget.explore(S, MIB, seed=True)",
                   "test_mem.py::test_seed: explore() seed=True: expected a whole number (or None: random)")],
        consecutive=False)
    out = result.stdout.str()
    assert not any(name in out for name in ("explore.py", "session.py", "fixture.py", "ValueError", "SizeError")), out


def test_a_declaration_refused_in_a_test_body_shows_at_the_tests_own_line(project):
    """A Scenario built in the test (a command case, a fix added), or an Envelope, refused: the failure is the
    test's line and the refusal naming the value, not the frames of the declaring code down to its raise
    (declare/scenario.py, declare/fixes.py, the dataclass __init__, search/envelope.py)."""
    pytester = project('''
from gpu_budget.search.explore import Envelope

S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_fix(gpu_budget):
    gpu_budget.measure(S.with_fixes("lroa"))

@pytest.mark.gpu_budget(ram="2 GiB")
def test_command(gpu_budget):
    gpu_budget.measure(Scenario(name="cmd", command="python train.py"))

@pytest.mark.gpu_budget(ram="2 GiB")
def test_envelope(gpu_budget):
    gpu_budget.explore(S, Envelope({"mib": (8, 1)}))
''')
    result = run(pytester)
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([
        *shown_at('gpu_budget.measure(S.with_fixes("lroa"))',
                  "gpu_budget.declare.fixes.FixError: scenario 'alloc': unknown fix 'lroa' (registered: *", "FixError"),
        *shown_at('gpu_budget.measure(Scenario(name="cmd", command="python train.py"))',
                  "ValueError: scenario 'cmd': command='python train.py': expected a non-empty list of strings*",
                  "ValueError"),
        *shown_at('gpu_budget.explore(S, Envelope({"mib": (8, 1)}))',
                  "ValueError: envelope knob 'mib': the range (8, 1) is empty (lo > hi)", "ValueError")],
        consecutive=False)
    out = result.stdout.str()
    assert not any(name in out for name in ("scenario.py", "fixes.py", "envelope.py", "<string>", "__post_init__")), out


def test_a_scenario_field_of_the_wrong_kind_names_it_at_the_tests_own_line(project):
    """fixes=5 and prepared_from=5 were a bare "TypeError: 'int' object is not iterable" shown in the declaring code
    (declare/fixes.py, declare/params.py) naming no field; run=5 said "5 must be a module-level function", naming no
    scenario or field. Each now names the scenario, the field and the value, at the test's line."""
    pytester = project('''
@pytest.mark.gpu_budget(ram="2 GiB")
def test_fixes(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 8}, fixes=5))

@pytest.mark.gpu_budget(ram="2 GiB")
def test_prepared(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 8}, prepared_from=5))

@pytest.mark.gpu_budget(ram="2 GiB")
def test_run(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run=5, params={"mib": 8}))
''')
    result = run(pytester)
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([
        *shown_at('gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 8}, fixes=5))',
                  "gpu_budget.declare.fixes.FixError: scenario 'alloc': fixes=5: expected fix names or gpu_budget.Fix "
                  "objects (fixes=('a', 'b'))", "FixError"),
        *shown_at('gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 8}, prepared_from=5))',
                  "ValueError: scenario 'alloc': prepared_from=5: expected names of knobs *", "ValueError"),
        *shown_at('gpu_budget.measure(Scenario(name="alloc", run=5, params={"mib": 8}))',
                  "ValueError: scenario 'alloc': run=5 must be a module-level function *", "ValueError")],
        consecutive=False)
    out = result.stdout.str()
    assert not any(name in out for name in ("scenario.py", "fixes.py", "params.py", "<string>", "not iterable")), out


def test_a_fix_field_of_the_wrong_kind_names_it_at_the_tests_own_line(project):
    """A user's own Fix with needs=5 was a bare "TypeError: 'int' object is not iterable" from declare/fixes.py."""
    pytester = project('''
from gpu_budget import Fix

S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_needs(gpu_budget):
    gpu_budget.measure(S.with_fixes(Fix("mine", "train", "halves it", needs=5)))
''')
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(shown_at(
        'gpu_budget.measure(S.with_fixes(Fix("mine", "train", "halves it", needs=5)))',
        "gpu_budget.declare.fixes.FixError: fix 'mine': needs=5: expected strings (needs=('cuda', *))", "FixError"),
        consecutive=False)
    assert "fixes.py" not in result.stdout.str()


def test_peak_explore_or_note_given_no_scenario_fails_at_the_tests_own_line(project):
    """measure("alloc") was refused naming the value; peak(), explore() and note() given the same raised an
    AttributeError from the gate's code ("'str' object has no attribute 'scales'", can_run.py; 'params_for',
    explore.py; 'name', session.py)."""
    pytester = project('''
from gpu_budget.search.explore import Envelope

@pytest.mark.gpu_budget(ram="2 GiB")
def test_peak(gpu_budget):
    gpu_budget.peak("alloc")

@pytest.mark.gpu_budget(ram="2 GiB")
def test_explore(gpu_budget):
    gpu_budget.explore({"name": "alloc"}, Envelope({"mib": (1, 8)}))

@pytest.mark.gpu_budget(ram="2 GiB")
def test_note(gpu_budget):
    gpu_budget.note("alloc", "a finding")
''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-explore")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([
        *failed_at('gpu_budget.peak("alloc")',
                   "test_mem.py::test_peak: peak() takes a gpu_budget.Scenario, got 'alloc'"),
        *failed_at('gpu_budget.explore({"name": "alloc"}, Envelope({"mib": (1, 8)}))',
                   "test_mem.py::test_explore: explore() takes a gpu_budget.Scenario, got {'name': 'alloc'}"),
        *failed_at('gpu_budget.note("alloc", "a finding")',
                   "test_mem.py::test_note: note() takes a gpu_budget.Scenario, got 'alloc'")], consecutive=False)
    out = result.stdout.str()
    assert not any(name in out for name in ("AttributeError", "session.py", "fixture.py", "can_run.py")), out


def test_a_note_whose_text_is_no_text_or_data_nan_fails_at_the_tests_own_line(project):
    """note(S, 5) was accepted, and its 5 written where the JSON report and FINDINGS.md say the finding in words; a
    blank text said nothing there; a nan in its data was written NaN into the JSON report, which no strict reader
    reads, and a key 1 as "1". Each now fails at the test's line, naming the value, as note()'s data that is no JSON does."""
    pytester = project('''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_number(gpu_budget):
    gpu_budget.note(S, 5)

@pytest.mark.gpu_budget(ram="2 GiB")
def test_blank(gpu_budget):
    gpu_budget.note(S, " ", boundary=4)

@pytest.mark.gpu_budget(ram="2 GiB")
def test_nan(gpu_budget):
    gpu_budget.note(S, "the boundary", ratio=float("nan"))

''')
    result = run(pytester)
    result.assert_outcomes(failed=3)
    expected = "expected the finding in words, a non-empty string"
    result.stdout.fnmatch_lines([
        *failed_at("gpu_budget.note(S, 5)", f"test_mem.py::test_number: gpu_budget.note() text=5: {expected}"),
        *failed_at('gpu_budget.note(S, " ", boundary=4)',
                   f"test_mem.py::test_blank: gpu_budget.note() text=' ': {expected}"),
        *failed_at('gpu_budget.note(S, "the boundary", ratio=float("nan"))',
                   "test_mem.py::test_nan: gpu_budget.note() data must be JSON-able: ratio=nan: *")], consecutive=False)
    assert "session.py" not in result.stdout.str()
