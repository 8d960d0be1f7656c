"""A test that asks for the gpu_budget fixture while it runs (request.getfixturevalue) carries neither the marker nor
the fixture at collection, so the session did not note it as collected: an update wrote its entry, then pruned it as
a test no longer collected, in the same session, and the next run had no baseline for it."""

import json

import pytest

ASKED_LATE = '''
@pytest.mark.gpu_budget(ram="1 GiB")
def test_marked(gpu_budget):
    gpu_budget.measure(Scenario(name="marked", run="runners:alloc", params={"mib": 2}))

def test_asked_late(request):
    request.getfixturevalue("gpu_budget").measure(Scenario(name="late", run="runners:alloc", params={"mib": 2}))
'''


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])
def test_an_update_keeps_the_entry_of_a_test_that_asked_for_the_fixture_while_running(project, workers):
    pytester = project(ASKED_LATE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-update", *workers)
    result.assert_outcomes(passed=2)
    assert not [line for line in result.stdout.lines if line.startswith("baselines: dropped")]
    (path,) = (pytester.path / "baselines").glob("*/test_mem.json")
    assert sorted(json.loads(path.read_text())["entries"]["tiny"]) == ["test_mem.py::test_asked_late",
                                                                       "test_mem.py::test_marked"]
