"""A test that now measures another scenario than its baseline entry was recorded for says so in its row, as a params
change does (judge/compare.py scenario_note): the entry's figures are another scenario's. Before, a test switched
from one Scenario to another of the same size passed "within budget and baseline" with nothing to tell the two
apart."""

import json

SWITCHED = '''
import os

@pytest.mark.gpu_budget(ram="1 GiB")
def test_train(gpu_budget):
    gpu_budget.measure(Scenario(name=os.environ["NAME"], run="runners:alloc", params={"mib": 8}))
'''


def run(pytester):
    return pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=report.json")


def test_a_row_judged_against_another_scenarios_entry_names_both(project, monkeypatch):
    pytester = project(SWITCHED)
    monkeypatch.setenv("NAME", "lora")
    run(pytester).assert_outcomes(passed=1)
    run(pytester).assert_outcomes(passed=1)
    (same,) = json.loads((pytester.path / "report.json").read_text())["results"]
    assert "scenario" not in same["message"]
    monkeypatch.setenv("NAME", "full")
    result = run(pytester)
    result.assert_outcomes(passed=1)
    (row,) = json.loads((pytester.path / "report.json").read_text())["results"]
    assert row["message"].startswith("scenario differs from the baseline's: 'lora' -> 'full'"), row["message"]
    result.stdout.fnmatch_lines(["test_mem.py::test_train: scenario differs from the baseline's: 'lora' -> 'full'*"])
