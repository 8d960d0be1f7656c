"""A test parametrized over Scenarios keys each case by its scenario's name and fixes, not its place in the list
(pytest_plugin.py pytest_make_parametrize_id). Before, pytest named them 'scenario0', 'scenario1': a reorder or an
insertion in the list judged each scenario against another's baseline (8 MiB against 64 MiB's read "improved")."""

import json

PARAMETRIZED = '''
import os

SMALL = Scenario(name="small", run="runners:alloc", params={"mib": 8})
BIG = Scenario(name="big", run="runners:alloc", params={"mib": 64})
CASES = [SMALL, BIG, BIG.with_fixes("lora")]
if os.environ.get("REORDER"):
    CASES.reverse()

@pytest.mark.gpu_budget(ram="1 GiB")
@pytest.mark.parametrize("scenario", CASES)
def test_train(gpu_budget, scenario):
    gpu_budget.measure(scenario)
'''


def run(pytester):
    return pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=report.json")


def test_a_reordered_list_of_scenarios_keeps_each_ones_baseline(project, monkeypatch):
    pytester = project(PARAMETRIZED)
    run(pytester).assert_outcomes(passed=3)
    (path,) = (pytester.path / "baselines").glob("*/test_mem.json")
    keys = {"test_mem.py::test_train[small]", "test_mem.py::test_train[big]", "test_mem.py::test_train[big+lora]"}
    assert set(json.loads(path.read_text())["entries"]["tiny"]) == keys
    monkeypatch.setenv("REORDER", "1")
    run(pytester).assert_outcomes(passed=3)
    rows = json.loads((pytester.path / "report.json").read_text())["results"]
    assert {r["nodeid"]: r["verdict"] for r in rows} == dict.fromkeys(keys, "pass")  # keys and node ids agree here
