"""A measured case's detail in pytest's own report: a failing test's longrepr (so junitxml and IDEs show it),
and a "gpu-budget" section on every test that measured a case (pytest -rA shows it for a pass)."""

import xml.etree.ElementTree as ET
from dataclasses import replace

from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.entry import Entry
from gpu_budget.model.figures import Peaks, PhaseRecord, RankFigures
from gpu_budget.model.result import Failure, Measurement, Result
from gpu_budget.report import terminal

MiB = 2**20

CASES = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 64})

@pytest.mark.gpu_budget(ram="100 MiB")
def test_over(gpu_budget):
    gpu_budget.measure(S)

@pytest.mark.gpu_budget(ram="2 GiB")
def test_fits(gpu_budget):
    gpu_budget.measure(S, label="first")
    gpu_budget.measure(S, label="second")

@pytest.mark.gpu_budget(ram="4 GiB")
def test_raises(gpu_budget):
    gpu_budget.measure(Scenario(name="boom", run="runners:boom"))

def test_plain():
    pass
'''


def test_a_failing_case_shows_its_detail_in_junitxml_and_a_passing_one_its_section(project):
    pytester = project(CASES)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "-rA", "--junitxml=junit.xml")
    result.assert_outcomes(passed=2, failed=2)
    cases = {c.get("name"): c for c in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")}

    over = cases["test_over"].find("failure")
    assert over.get("message").startswith("Failed: [gpu-budget over-budget] host RAM peak ")
    lines = over.text.splitlines()
    assert lines[0].startswith("[gpu-budget over-budget] host RAM peak ") and lines[0].endswith("> budget 100.00 MiB")
    assert "case: alloc (scenario alloc, scale tiny, device cpu)" in lines
    assert "verdict: over-budget FAIL" in lines and "budget: RAM 100.00 MiB" in lines
    assert any(line.startswith("peaks: RAM tree ") and ", RAM main " in line for line in lines)
    assert "baseline: none" in lines and "fixes: -" in lines

    raised = cases["test_raises"].find("failure").text.splitlines()
    assert "child failed (exception, builtins.RuntimeError): the scenario broke" in raised
    assert "  RuntimeError: the scenario broke" in raised  # the child's traceback, its last lines
    assert cases["test_fits"].find("failure") is None and cases["test_plain"].find("failure") is None

    out = result.stdout.str()
    passes = out[out.index("= PASSES =") : out.index("short test summary info")]
    assert "test_plain" not in passes  # no case measured: no section
    result.stdout.fnmatch_lines(["*= PASSES =*", "*_ test_fits _*", "*- gpu-budget -*",
                                 "first (tiny): no-baseline; peaks RAM tree *MiB, RAM main *MiB; budget RAM 2.00 GiB",
                                 "second (tiny): no-baseline; peaks RAM tree *MiB, RAM main *MiB; budget RAM 2.00 GiB"])
    result.stdout.fnmatch_lines(["*_ test_over _*", "[[]gpu-budget over-budget] host RAM peak *", "",
                                 "case: alloc *", "verdict: over-budget FAIL", "*- gpu-budget -*",
                                 "alloc (tiny): over-budget FAIL; peaks RAM tree *; budget RAM 100.00 MiB"])


def test_the_detail_and_the_section_cross_xdist(project):
    """A worker's report carries both to the controller (they are on the report, not in the session's data)."""
    pytester = project(CASES)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-n", "2", "--gpu-budget", "-rA", "--junitxml=junit.xml")
    result.assert_outcomes(passed=2, failed=2)
    cases = {c.get("name"): c for c in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")}
    assert "verdict: over-budget FAIL" in cases["test_over"].find("failure").text.splitlines()
    result.stdout.fnmatch_lines(["*_ test_fits _*", "*- gpu-budget -*", "first (tiny): no-baseline; *",
                                 "second (tiny): no-baseline; *"])


def test_each_cases_junit_properties_name_the_case_they_hold(project):
    """A test of two cases gets two sets of the same property names: each set is headed by the case's row name, so a
    reader of the XML knows whose peak is whose; a figure not measured (no CUDA here) is left out, not "None"."""
    pytester = project(CASES)
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--junitxml=junit.xml")
    cases = {c.get("name"): c for c in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")}
    props = [(p.get("name"), p.get("value")) for p in cases["test_fits"].iter("property")]
    names = [name for name, _ in props]
    assert names == 2 * ["gpu_budget_case", "gpu_budget_ram_peak", "gpu_budget_ram_tree_peak", "gpu_budget_verdict"]
    assert [value for name, value in props if name == "gpu_budget_case"] == ["test_mem.py::test_fits::first",
                                                                             "test_mem.py::test_fits::second"]


def test_the_section_shows_the_baseline_and_change_once_one_is_recorded(project):
    pytester = project('''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 64})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_fits(gpu_budget):
    gpu_budget.measure(S)
''')
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=1)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "-rA")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*- gpu-budget -*", ("alloc (tiny): pass; peaks *; budget RAM 2.00 GiB; "
                                                       "baseline * MiB, change RAM tree *%")])


def _row(**changes) -> Result:
    phases = {"load": {"name": "load", "ram_peak": 100 * MiB, "ram_tree_peak": 100 * MiB},
              "train_step_1": {"name": "train_step_1", "ram_peak": 120 * MiB, "ram_tree_peak": 300 * MiB,
                               "tree": {"processes": 2, "exited": 1}}}
    measurement = Measurement(status="ok", peaks=Peaks(ram=120 * MiB, ram_tree=300 * MiB, vram_allocated=None),
                              phases={name: PhaseRecord.from_json(p) for name, p in phases.items()})
    row = Result(nodeid="t.py::test_x", scenario="s1", scale="tiny", verdict="regression", passed=False,
                 message="ram_tree 300.00 MiB > baseline ...", fixes=("lora",), device="cpu",
                 budget=Budget(ram=2**30), tolerance=Tolerance(rel=0.02, abs=16 * MiB),
                 measurement=measurement, change={"ram_tree": 0.5},
                 baseline=Entry(Peaks(ram=110 * MiB, ram_tree=200 * MiB), recorded="2026-11-01"),
                 fingerprint_changed=("threads 1 -> 2",))
    return row.but(**changes)


def test_the_detail_of_a_regression_names_baseline_change_tree_and_setup():
    lines = terminal.case_detail(_row())
    assert lines[:4] == ["case: s1 (scenario s1, scale tiny, device cpu)", "verdict: regression FAIL",
                         "peaks: RAM tree 300.00 MiB, RAM main 120.00 MiB", "budget: RAM 1.00 GiB"]
    assert "baseline: 200.00 MiB (recorded 2026-11-01)" in lines and "change: RAM tree +50.0%" in lines
    assert "tolerance: 2.0% + 16.00 MiB" in lines and "fixes: lora" in lines
    assert ("process tree: phase train_step_1: main process 120.00 MiB + 2 descendant process(es), 1 exited in it "
            "180.00 MiB = 300.00 MiB") in lines
    assert "setup differs from the baseline's: threads 1 -> 2" in lines


def test_a_launchs_tree_line_names_its_worst_ranks_own_process_and_no_unknown_count():
    """A launcher row's figures are its worst rank's: its phases carry no tree reading, and its "main process" is that
    rank's own process, not the launcher."""
    row = _row()
    phase = PhaseRecord.from_json({"name": "train_step_2", "ram_peak": 310 * MiB, "ram_tree_peak": 460 * MiB})
    ranks = (RankFigures(rank=0, peaks=Peaks(ram=300 * MiB, ram_tree=400 * MiB)),
             RankFigures(rank=1, peaks=Peaks(ram=310 * MiB, ram_tree=460 * MiB)))
    launch = row.but(measurement=replace(row.measurement, phases={"train_step_2": phase}, ranks=ranks))
    (line,) = [x for x in terminal.case_detail(launch) if x.startswith("process tree:")]
    assert line == ("process tree: phase train_step_2: rank 1's own process 310.00 MiB + its descendant process(es) "
                    "150.00 MiB = 460.00 MiB")
    assert terminal.failure_text(_row()).startswith("[gpu-budget regression] ram_tree 300.00 MiB > baseline ...\n\ncase: s1")


def test_a_failed_childs_detail_keeps_the_last_lines_of_its_traceback():
    traceback = "\n".join(f"line {i}" for i in range(40))
    failed = Measurement(status="error", peaks=Peaks(ram=20 * MiB), error=Failure(
        kind="exit", type=None, message="command 'x' exited 3; the last lines of its stderr:\nboom",
        traceback=traceback))
    lines = terminal.case_detail(_row(measurement=failed, verdict="error", label="big"))
    assert lines[0] == "case: big (scenario s1, scale tiny, device cpu)"
    assert "child failed (exit): command 'x' exited 3; the last lines of its stderr:\nboom" in lines
    tail = lines[lines.index("child's traceback (last lines):") + 1:]
    assert tail == [f"  line {i}" for i in range(40 - terminal.TRACEBACK_TAIL, 40)]


def test_the_section_line_of_a_case_without_a_baseline_leaves_it_out():
    line = terminal.case_line(_row(baseline=None, verdict="no-baseline", passed=True, label="first"))
    assert line == "first (tiny): no-baseline; peaks RAM tree 300.00 MiB, RAM main 120.00 MiB; budget RAM 1.00 GiB"
    assert terminal.case_line(_row()).endswith("; baseline 200.00 MiB, change RAM tree +50.0%")
