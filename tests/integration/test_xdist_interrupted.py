"""A gate under `-n 2` stopped by Ctrl-C keeps what its workers' finished tests measured, and leaves no measured child.

An xdist worker ships its session data to the controller only when it
finishes; a worker stopped mid-case never does. Each test's report also
carries its rows and the baseline entries it settled (session/xdist.py), so
the report still holds every case that finished and the controller writes
the entries of those that passed, as a serial session stopped at the same
point has written them as each test reported: both leave the same baseline
store. The gate fails saying a worker did not finish. The interrupt here is
deterministic: the slow case's measured child waits until the controller
(or the serial session) has logged both quick cases, then sends SIGINT to
the session's process group, as Ctrl-C in a terminal or a CI job's timeout
does.
"""

import json
import os
import signal
import subprocess
import sys

import pytest
from inner_session import alive, leave_outer_run

RUNNERS = '''
import os, pathlib, signal, time


def quick(ctx):
    with ctx.meter.phase("load"):
        held = b"\\x01" * (8 << 20)
    return {"held": len(held)}


def interrupt(ctx):
    """Once both quick cases are logged, Ctrl-C the session (its process group), then wait to be ended."""
    pathlib.Path("slow.pid").write_text(str(os.getpid()))
    ctx.meter.start("load")
    deadline = time.monotonic() + 120
    while len(list(pathlib.Path(".").glob("done-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(os.getpgid(os.getppid()), signal.SIGINT)  # the forkserver's group: the session's
    time.sleep(120)
'''

CONFTEST = '''
import os


def pytest_runtest_logreport(report):
    """On the controller: a file per passed call, which the slow case waits for."""
    if report.when == "call" and report.passed and "PYTEST_XDIST_WORKER" not in os.environ:
        open("done-" + report.nodeid.split("::")[-1], "w").close()
'''

TESTS = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="1 GiB")
def test_quick(gpu_budget):
    gpu_budget.measure(Scenario(name="quick", run="runners:quick"))


@pytest.mark.gpu_budget(ram="1 GiB")
def test_quick_too(gpu_budget):
    gpu_budget.measure(Scenario(name="quick_too", run="runners:quick"))


@pytest.mark.gpu_budget(ram="1 GiB")
def test_interrupted(gpu_budget):
    gpu_budget.measure(Scenario(name="slow", run="runners:interrupt"))
'''


def entries(folder) -> list[str]:
    """The keys of every baseline entry written under `folder`."""
    return sorted(key for path in folder.rglob("*.json")
                  for cases in json.loads(path.read_text())["entries"].values() for key in cases)


@pytest.mark.parametrize("spread", [["-n", "2"], ["-p", "no:xdist"]], ids=["xdist", "serial"])
def test_ctrl_c_keeps_the_finished_rows_and_entries_and_fails_the_gate(pytester, monkeypatch, spread):
    """Before, under -n 2 the worker that measured test_quick_too never shipped its entry: one entry was written
    (`baselines: recorded 1 new entry`), where the serial session had written both."""
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, conftest=CONFTEST, test_mem=TESTS)
    leave_outer_run(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", *spread, "--gpu-budget",
           "--gpu-budget-json=r.json", "--gpu-budget-baselines=baselines", "-q"]
    done = subprocess.run(cmd, cwd=pytester.path, capture_output=True, text=True, timeout=240, check=False,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(pytester.path),
                                                                            os.environ.get("PYTHONPATH", "")])},
                          start_new_session=True,  # its own process group, so the SIGINT stays in it
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # a background job's SIG_IGN
    out = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    report = json.loads((pytester.path / "r.json").read_text())
    assert sorted(r["nodeid"] for r in report["results"]) == ["test_mem.py::test_quick",
                                                              "test_mem.py::test_quick_too"], out[-3000:]
    assert entries(pytester.path / "baselines") == ["test_mem.py::test_quick", "test_mem.py::test_quick_too"], out[-3000:]
    assert "baselines: recorded 2 new entries in baselines/" in out, out[-3000:]
    assert "the session was interrupted (Ctrl-C, SIGTERM) after 2 " in out, out[-3000:]  # "of 3" where a worker
    # shipped the count it selected: under -n 2 the idle worker's may not, the same Ctrl-C ending it too
    assert not alive(int((pytester.path / "slow.pid").read_text())), "the interrupted case's child outlived it"
    if spread[0] == "-n":
        assert any("did not finish (interrupted, or it crashed)" in p for p in report["gate_problems"]), report
        assert "gpu-budget gate FAILED: xdist worker gw" in out, out[-3000:]



CRASHING = '''
import os

import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="1 GiB")
def test_recorded(gpu_budget):
    gpu_budget.measure(Scenario(name="quick", run="runners:quick"))


@pytest.fixture
def measured_after(gpu_budget):
    yield
    gpu_budget.measure(Scenario(name="after", run="runners:quick"))


@pytest.mark.gpu_budget(ram="1 GiB")
def test_measured_in_teardown(measured_after):
    pass


@pytest.mark.gpu_budget(ram="1 GiB")
def test_fails_after(gpu_budget):
    gpu_budget.measure(Scenario(name="failing", run="runners:quick"))
    assert False, "broken after measuring"


def test_crash():
    os._exit(3)  # the worker dies before it ships its session data
'''


def test_a_crashed_worker_s_passed_tests_still_record_and_a_failed_one_does_not(pytester, monkeypatch):
    """A worker that dies never ships its data; its tests' reports carried the entries of those that passed, the one
    a fixture measured at teardown too, and a failed test's withheld entry. Before, no entry was written and each row
    said `no baseline yet: its xdist worker did not finish, so no baseline entry was written`; a serial session that
    dies at the same test has written both as each test reported."""
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_mem=CRASHING)
    leave_outer_run(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-n", "1", "--gpu-budget",
                                           "--gpu-budget-json=r.json", "--gpu-budget-baselines=baselines")
    result.assert_outcomes(passed=2, failed=2)
    rows = {r["nodeid"].split("::")[1]: r["message"] for r in json.loads((pytester.path / "r.json").read_text())["results"]}
    assert entries(pytester.path / "baselines") == ["test_mem.py::test_measured_in_teardown", "test_mem.py::test_recorded"]
    assert "no baseline yet: recorded" in rows["test_recorded"], rows
    assert "no baseline yet: recorded" in rows["test_measured_in_teardown"], rows
    assert "its test did not pass, so no baseline entry was written" in rows["test_fails_after"], rows
    result.stdout.fnmatch_lines([("gpu-budget gate FAILED: xdist worker gw0 did not finish (interrupted, or it crashed): "
                                  "its 3 measured row(s) and the 2 baseline entries its passed tests recorded are taken "
                                  "from its tests' reports"),
                                 "baselines: recorded 2 new entries in baselines/*",
                                 "*1 entry not recorded, its test did not pass after measuring (test_mem.py::test_fails_after)*"])


# what pytest-rerunfailures does to a failing test: the failed attempt's reports are logged (the failed one as
# "rerun"), then the same item's setup, call and teardown run once more
RERUN_LOGGED = '''
import pytest
from _pytest.runner import runtestprotocol


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    if any(report.failed for report in reports):
        for report in reports:
            if report.failed:
                report.outcome = "rerun"
            item.ihook.pytest_runtest_logreport(report=report)
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
'''

FLAKY_THEN_CRASH = '''
import os

import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="1 GiB")
def test_flaky(gpu_budget):
    gpu_budget.measure(Scenario(name="quick", run="runners:quick"))
    if not os.path.exists("flaked"):
        open("flaked", "w").close()
        assert False, "flaky after measuring"


def test_crash():
    os._exit(3)
'''


def test_a_crashed_worker_s_rerun_test_keeps_its_last_attempt_alone(pytester, monkeypatch):
    """The reports of a rerun test's failed attempt reach the controller too; its worker forgets that attempt's row
    and withheld entry (session/attempts.py), and so does the controller for a worker that never ships its data.
    Before, the table held test_flaky twice (`no-baseline, test FAILED` above `no-baseline`) and the summary said
    `1 entry not recorded, its test did not pass after measuring (test_mem.py::test_flaky)`, as a finished worker's
    session does not."""
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, conftest=RERUN_LOGGED, test_mem=FLAKY_THEN_CRASH)
    leave_outer_run(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-n", "1", "--gpu-budget",
                                           "--gpu-budget-json=r.json", "--gpu-budget-baselines=baselines")
    result.assert_outcomes(passed=1, failed=1)
    (row,) = json.loads((pytester.path / "r.json").read_text())["results"]
    assert (row["verdict"], row["test_outcome"]) == ("no-baseline", "passed"), row
    assert entries(pytester.path / "baselines") == ["test_mem.py::test_flaky"]
    assert "not recorded" not in result.stdout.str()
    result.stdout.fnmatch_lines([("gpu-budget gate FAILED: xdist worker gw0 did not finish*its 1 measured row(s) and "
                                  "the 1 baseline entry*")])
