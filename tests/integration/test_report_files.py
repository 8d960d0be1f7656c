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


def test_a_session_without_the_gate_or_only_collecting_leaves_the_last_json_report_as_it_was(project):
    pytester = project(FITS)
    pytester.makeini("[pytest]\ngpu_budget_preload =\ngpu_budget_json = gate.json\n")
    run(pytester, "--gpu-budget").assert_outcomes(passed=1)
    report = pytester.path / "gate.json"
    (row,) = json.loads(report.read_text())["results"]
    run(pytester).assert_outcomes(skipped=1)  # the unit tests' run, the gate off: it measured nothing
    assert json.loads(report.read_text())["results"] == [row]
    for listing in ("--collect-only", "--setup-plan", "--setup-only", "--fixtures"):  # listing measures nothing either
        assert run(pytester, "--gpu-budget", listing).ret == 0
        assert json.loads(report.read_text())["results"] == [row], listing


def test_a_json_report_that_cannot_be_written_fails_the_gate_naming_it_and_the_table_still_shows(project):
    pytester = project(FITS + '''

def test_takes_the_report_path():
    import os
    os.mkdir("r.json")  # the report's path is a folder by the session's end
''')
    result = run(pytester, "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=2)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*test_mem.py::test_fits*no-baseline*",
                                 f"gpu-budget gate FAILED: could not write the JSON report to {pytester.path / 'r.json'}: *"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert "JSON report: " not in result.stdout.str()  # the terminal names no report that was not written
    assert sorted(p.name for p in pytester.path.glob("r.json*")) == ["r.json"]  # no half-written file left beside it


def test_a_step_summary_that_cannot_be_written_fails_the_gate_naming_it(project, monkeypatch):
    pytester = project(FITS)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "missing" / "summary.md"))
    result = run(pytester, "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1)
    assert result.ret == 1
    where = pytester.path / "missing" / "summary.md"
    result.stdout.fnmatch_lines(["*test_mem.py::test_fits*no-baseline*",
                                 f"gpu-budget gate FAILED: could not append the step summary to {where} (GITHUB_STEP_SUMMARY): *"])
    assert json.loads((pytester.path / "r.json").read_text())["results"]  # the report before it is written
