"""A case stopped by pytest-timeout's signal method mid-measurement keeps its row (isolate/stopped_wait.py): its
figures so far, failed, nothing recorded, nothing left running; the test fails with pytest-timeout's message."""

import json
import os
import sys

import pytest
from inner_session import SLOW_CASE, left_after, rows, stepping_then_asleep, survivors

pytest.importorskip("pytest_timeout", reason="pytest-timeout is not installed (not in the dev extra)")

MiB = 2**20
MARKER = "gpu-budget-timeout-sleeper"

SCRIPT = stepping_then_asleep(4, 300, before=f'''import subprocess
import sys
sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "{MARKER}"])
open("pids", "w").write(f"{{sleeper.pid}}\\n")''')

TESTS = SLOW_CASE + f'''

@pytest.mark.gpu_budget(ram="2 GiB")
def test_quick(gpu_budget):
    gpu_budget.measure(Scenario(name="quick", command=[{sys.executable!r}, "-c", "pass"]))
'''


def test_a_case_stopped_by_pytest_timeout_keeps_its_row(pytester, monkeypatch):
    """A script that starts a sleeper, marks 4 steps of 30 MiB and sleeps, under --timeout=6 (signal method). The
    timed-out case had no row: the table held test_quick alone, and the gate said "1 memory-budget test(s) failed
    without a row in the table: test_mem.py::test_slow (Failed: Timeout (>6.0s) from pytest-timeout.)"."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(train=SCRIPT, test_mem=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json",
                                           "--timeout=6", "--timeout-method=signal")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["FAILED test_mem.py::test_slow - Failed: Timeout (>6.0s) from pytest-timeout."])
    assert "without a row" not in result.stdout.str()
    result.stdout.re_match_lines([r"test_mem.py::test_slow +tiny +1\d\d\.\d\d MiB .* error FAIL$"])
    row = rows(pytester)["test_slow"]
    assert row["error"]["kind"] == "stopped", row["error"]
    assert "Failed: Timeout (>6.0s) from pytest-timeout." in row["message"], row["message"]
    assert row["error"]["phase"] == "train_step_4", row["error"]
    assert list(row["phases"])[-1] == "train_step_4", list(row["phases"])
    assert row["peaks"]["ram_tree"] >= 4 * 30 * MiB, row["peaks"]
    assert row["ram_tree_bound"].startswith("phase 'train_step_4', stopped before it ended"), row["ram_tree_bound"]
    assert (row["passed"], row["test_outcome"]) == (False, "failed"), row
    stored = json.loads(next((pytester.path / "baselines").glob("*/test_mem.json")).read_text())
    assert list(stored["entries"]["tiny"]) == ["test_mem.py::test_quick"], stored["entries"]
    sleeper = int((pytester.path / "pids").read_text())
    assert left_after([sleeper], 5) == [], survivors(MARKER)


def test_a_stop_before_the_child_began_is_an_error_row(pytester, monkeypatch):
    """pytest-timeout firing while a scenario's prepare runs (nothing of the case measured yet): the row is an error
    that says what stopped it, and the session goes on to the next case."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(prep='''
import time


def prepare(ctx):
    time.sleep(300)


def run(ctx):
    pass
''', test_mem='''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_prepared(gpu_budget):
    gpu_budget.measure(Scenario(name="prepared", run="prep:run", prepare="prep:prepare"))


@pytest.mark.gpu_budget(ram="2 GiB")
def test_after(gpu_budget):
    gpu_budget.measure(Scenario(name="after", run="prep:run"))
''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json",
                                           "--timeout=5", "--timeout-method=signal")
    result.assert_outcomes(failed=1, passed=1)
    row = rows(pytester)["test_prepared"]
    assert row["verdict"] == "error", row
    assert row["message"] == ("stopped by an exception raised in the test's process (Failed: Timeout (>5.0s) from "
                              "pytest-timeout.) before anything of the case was measured"), row["message"]


def test_a_stop_during_the_recording_runs_records_nothing(pytester, monkeypatch):
    """A first run judged "no baseline yet: recorded", then --gpu-budget-record-runs=3's further runs stopped by
    pytest-timeout: the row said "no baseline yet: recorded; a further run of it was stopped ..., so nothing was
    recorded", both at once. Now it says only that no entry was written, and none is."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(test_mem=f'''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_recorded(gpu_budget):
    gpu_budget.measure(Scenario(name="recorded", command=[{sys.executable!r}, "-c", "import time; time.sleep(2)"]))
''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json",
                                           "--gpu-budget-record-runs=3", "--timeout=6", "--timeout-method=signal")
    result.assert_outcomes(failed=1)
    row = rows(pytester)["test_recorded"]
    assert row["message"] == ("no baseline yet: a further run of it was stopped by an exception raised in the test's "
                              "process (Failed: Timeout (>6.0s) from pytest-timeout.), so no baseline entry was "
                              "written"), row["message"]
    assert not list(pytester.path.glob("baselines/*/test_mem.json"))


def test_a_stop_while_the_device_is_read_is_pytest_timeouts_own(pytester, monkeypatch):
    """pytest-timeout firing as the session's forkserver imports its preload (the device read before any case): the
    test fails with pytest-timeout's message, not the gate's internal WaitStopped, and the next test's does too."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload = slowpre\n")
    pytester.makepyfile(slowpre="import time\ntime.sleep(4)\n", test_mem=f'''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_first(gpu_budget):
    gpu_budget.measure(Scenario(name="first", command=[{sys.executable!r}, "-c", "pass"]))


@pytest.mark.gpu_budget(ram="2 GiB")
def test_second(gpu_budget):
    gpu_budget.measure(Scenario(name="second", command=[{sys.executable!r}, "-c", "pass"]))
''')
    monkeypatch.setenv("PYTHONPATH", f"{pytester.path}:{os.environ.get('PYTHONPATH', '')}")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--timeout=2", "--timeout-method=signal")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["FAILED test_mem.py::test_first - Failed: Timeout (>2.0s) from pytest-timeout.",
                                 "FAILED test_mem.py::test_second - Failed: Timeout (>2.0s) from pytest-timeout."])
    assert "WaitStopped" not in result.stdout.str()
