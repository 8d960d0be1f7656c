"""A test run again on the same item (pytest-rerunfailures' --reruns, its flaky marker): each attempt starts the test's
record afresh, so a rerun's measure() is not "called twice" and the table holds the attempt pytest reports
(session/attempts.py)."""

import json

import pytest
from inner_session import rows

# what pytest-rerunfailures does to a failing test, in a conftest of the inner project: the same item's setup, call and
# teardown run once more, and only the last attempt's reports are logged
RERUN_ONCE = '''
import pytest
from _pytest.runner import runtestprotocol


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    if any(report.failed for report in reports):
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
'''

CASES = '''
import os

S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_flaky(gpu_budget):
    gpu_budget.measure(S)
    if not os.path.exists("flaked"):
        open("flaked", "w").close()
        assert False, "flaky after measuring"

@pytest.mark.gpu_budget(ram="1 MiB")
def test_over(gpu_budget):
    gpu_budget.measure(S, label="one")
'''


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_rerun_measures_afresh_and_keeps_the_last_attempts_rows(project, workers):
    pytester = project(CASES)
    pytester.makeconftest(RERUN_ONCE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json", *workers)
    result.assert_outcomes(passed=1, failed=1)
    assert "called twice" not in result.stdout.str()
    found = {name: (row["verdict"], row["test_outcome"]) for name, row in rows(pytester).items()}
    assert found == {"test_flaky": ("no-baseline", "passed"), "test_over::one": ("over-budget", "failed")}
    assert "not recorded" not in result.stdout.str()  # the failed attempt's withheld entry is not counted
    stored = json.loads(next((pytester.path / "baselines").glob("*/test_mem.json")).read_text())
    assert list(stored["entries"]["tiny"]) == ["test_mem.py::test_flaky"]
