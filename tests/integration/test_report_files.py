"""The session's report files (the JSON report, the GitHub step summary): written by a gated session only, and a
file that cannot be written fails the gate naming it, the table still shown."""

import json

FITS = '''
@pytest.mark.gpu_budget(ram="2 GiB")
def test_fits(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 8}))
'''


def run(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:randomly", *args)


def test_a_session_without_the_gate_leaves_the_last_json_report_as_it_was(project):
    pytester = project(FITS)
    pytester.makeini("[pytest]\ngpu_budget_preload =\ngpu_budget_json = gate.json\n")
    run(pytester, "--gpu-budget").assert_outcomes(passed=1)
    report = pytester.path / "gate.json"
    (row,) = json.loads(report.read_text())["results"]
    run(pytester).assert_outcomes(skipped=1)  # the unit tests' run, the gate off: it measured nothing
    assert json.loads(report.read_text())["results"] == [row]
