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


DICTS = '''
import os

PARAMS = [{"mib": 8}, {"mib": 64}]
if os.environ.get("REORDER"):
    PARAMS.reverse()

@pytest.mark.gpu_budget(ram="1 GiB")
@pytest.mark.parametrize("params", PARAMS)
def test_train(gpu_budget, params):
    gpu_budget.measure(Scenario(name="s", run="runners:alloc", params=params))
'''


def test_a_reordered_list_of_params_dicts_keeps_pytests_ids_and_says_whose_entry_it_met(project, monkeypatch):
    """Only Scenarios are named by the plugin (docs/baselines.md): a dict keeps pytest's 'params0', so a reorder
    judges each case against the other's entry, and each row names the params change."""
    pytester = project(DICTS)
    run(pytester).assert_outcomes(passed=2)
    monkeypatch.setenv("REORDER", "1")
    run(pytester)
    rows = {r["nodeid"]: r["message"] for r in json.loads((pytester.path / "report.json").read_text())["results"]}
    assert set(rows) == {"test_mem.py::test_train[params0]", "test_mem.py::test_train[params1]"}
    assert "params differ from the baseline's: mib 8 -> 64" in rows["test_mem.py::test_train[params0]"]
    assert "params differ from the baseline's: mib 64 -> 8" in rows["test_mem.py::test_train[params1]"]


SAME_NAME = '''
SCENARIOS = [Scenario(name="alloc", run="runners:alloc", params={"mib": mib}) for mib in (8, 64)]

@pytest.mark.gpu_budget(ram="1 GiB")
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_numbered(gpu_budget, scenario):
    gpu_budget.measure(scenario)

@pytest.mark.gpu_budget(ram="1 GiB")
@pytest.mark.parametrize("scenario", SCENARIOS, ids=["small", "big"])
def test_named(gpu_budget, scenario):
    gpu_budget.measure(scenario)
'''


def test_scenarios_sharing_a_name_and_fixes_are_refused_where_pytest_numbers_them(project):
    """Two Scenarios of one name and fixes get one id, which pytest numbers by place ('alloc0', 'alloc1'): a reorder
    judged each against the other's entry ("regression FAIL", +320.8 %). Such a test fails naming the fix; with ids=
    of its own it runs."""
    pytester = project(SAME_NAME)
    result = run(pytester)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines([("*test_mem.py::test_numbered[[]alloc0[]]: parameter 'scenario': 2 different "
                                  "Scenarios share the id 'alloc' (their name and fixes), so pytest numbers them by "
                                  "their place (alloc0, alloc1)*give each a name of its own*or ids=*")])
    assert not list(pytester.path.glob("baselines/*/test_mem.json")) or "test_numbered" not in next(
        pytester.path.glob("baselines/*/test_mem.json")).read_text()
