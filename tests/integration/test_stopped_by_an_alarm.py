"""A test's own outcome raised from a signal handler into the wait for a measured child, as pytest-timeout's signal
method raises it, without pytest-timeout: an alarm in the inner project's conftest calls pytest.fail. Both places
the wait can be stopped (forkserver.run_child): while the child runs, and while the forkserver starts."""

import sys

from inner_session import SLOW_CASE, rows, stepping_then_asleep, survivors

CONFTEST = '''
import signal

import pytest


@pytest.fixture(autouse=True)
def alarm():
    """pytest-timeout's signal method, in short: Failed raised into whatever the test is doing."""
    def fire(signum, frame):
        pytest.fail("Timeout (>4.0s) from an alarm.", pytrace=False)

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(4)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)
'''
SCRIPT = stepping_then_asleep(3, 300)


def test_a_stop_while_the_child_runs_keeps_its_row_with_the_figures_so_far(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(conftest=CONFTEST, train=SCRIPT, test_mem=SLOW_CASE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget",
                                           "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["FAILED test_mem.py::test_slow - Failed: Timeout (>4.0s) from an alarm."])
    row = rows(pytester)["test_slow"]
    assert row["error"]["kind"] == "stopped" and row["error"]["phase"] == "train_step_3", row["error"]
    assert "(Failed: Timeout (>4.0s) from an alarm.)" in row["message"], row["message"]
    assert row["peaks"]["ram_tree"] >= 3 * 30 * 2**20, row["peaks"]


def test_a_stop_while_the_forkserver_starts_is_the_tests_own_failure_and_ends_the_forkserver(pytester, monkeypatch):
    """The forkserver imports a preload that hangs: the alarm's Failed goes on to pytest as it is. The forkserver,
    stuck in that import, outlived the session (its parent gone, still importing): the session's end waited 5 s for
    it to stop, then left it."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini(f"[pytest]\ngpu_budget_preload = {HANGS}\n")
    pytester.makepyfile(conftest=CONFTEST, train=SCRIPT, test_mem=SLOW_CASE, **{HANGS: "import time\ntime.sleep(300)\n"})
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["FAILED test_mem.py::test_slow - Failed: Timeout (>4.0s) from an alarm."])
    assert "WaitStopped" not in result.stdout.str()
    assert survivors(HANGS) == [], survivors(HANGS)


HANGS = "gpu_budget_alarm_hangs_on_import"  # the preload module: in the forkserver's command line


def test_a_stop_during_the_recording_runs_fails_the_judged_row_and_records_nothing(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(conftest=CONFTEST, test_mem=f'''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_recorded(gpu_budget):
    gpu_budget.measure(Scenario(name="recorded", command=[{sys.executable!r}, "-c", "import time; time.sleep(2)"]))
''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget",
                                           "--gpu-budget-json=r.json", "--gpu-budget-record-runs=3")
    result.assert_outcomes(failed=1)
    row = rows(pytester)["test_recorded"]
    assert (row["verdict"], row["passed"]) == ("error", False), row
    assert row["message"] == ("no baseline yet: a further run of it was stopped by an exception raised in the test's "
                              "process (Failed: Timeout (>4.0s) from an alarm.), so no baseline entry was written"), \
        row["message"]
    assert not list(pytester.path.glob("baselines/*/test_mem.json"))
