"""A serial gate stopped mid-run (Ctrl-C, a CI job's SIGTERM) writes reports that say they hold only the cases
measured before it stopped: before, the JSON report and the step summary of an interrupted session read as those of a
whole one (`"gate_problems": []`, "2 measured, 0 failed"), the case in flight and those after it missing unsaid."""

import json
import os
import signal
import subprocess
import sys

import pytest
from inner_session import leave_outer_run
from test_xdist_interrupted import CONFTEST, RUNNERS, TESTS


@pytest.mark.parametrize("sent", ["SIGINT", "SIGTERM"])
def test_an_interrupted_session_s_reports_say_they_are_partial(pytester, monkeypatch, sent):
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS.replace("signal.SIGINT", f"signal.{sent}"), conftest=CONFTEST,
                        test_mem=TESTS + "\n\n" + TESTS.split("\n\n\n")[-3].replace("test_quick", "test_after"))
    leave_outer_run(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    summary = pytester.path / "summary.md"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "--gpu-budget",
           "--gpu-budget-json=r.json", "--gpu-budget-baselines=baselines"]
    done = subprocess.run(cmd, cwd=pytester.path, capture_output=True, text=True, timeout=240, check=False,
                          env={**os.environ, "GITHUB_STEP_SUMMARY": str(summary),
                               "PYTHONPATH": os.pathsep.join([str(pytester.path), os.environ.get("PYTHONPATH", "")])},
                          start_new_session=True,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    out = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    report = json.loads((pytester.path / "r.json").read_text())
    assert [r["nodeid"] for r in report["results"]] == ["test_mem.py::test_quick", "test_mem.py::test_quick_too"]
    said = ("the session was interrupted (Ctrl-C, SIGTERM) after 2 of 4 selected memory-budget tests reported: the "
            "table, the JSON report and the step summary hold theirs only")
    assert report["gate_problems"] == [said], report["gate_problems"]
    assert f"gpu-budget gate FAILED: {said}" in out, out[-3000:]
    assert f"> **Gate failed:** {said}" in summary.read_text()


def test_a_session_pytest_stops_says_why_not_a_signal(pytester, monkeypatch):
    """A module that cannot be collected (pytest: "Interrupted: 1 error during collection") and a `pytest.exit()` end
    a session with a Ctrl-C's exit code. Before, the gate said "the session was interrupted (Ctrl-C, SIGTERM) after 0
    of 1 selected memory-budget test reported", naming a signal no one sent."""
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners="def hold(ctx):\n    return {}\n", test_mem='''
import pytest
from gpu_budget import Scenario

@pytest.mark.gpu_budget(ram="2 GiB")
def test_a(gpu_budget):
    gpu_budget.measure(Scenario(name="a", run="runners:hold"))

def test_stop():
    pytest.exit("enough for today")
''', test_broken="import not_a_module_anywhere\n")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pytester.path), os.environ.get("PYTHONPATH", "")]))
    broken = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")
    assert broken.ret == pytest.ExitCode.INTERRUPTED
    broken.stdout.fnmatch_lines([("gpu-budget gate FAILED: the session was interrupted (pytest: 1 error during "
                                 "collection) after 0 of 1 selected memory-budget test reported: *")])
    stopped = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "test_mem.py")
    assert stopped.ret == pytest.ExitCode.INTERRUPTED
    stopped.stdout.fnmatch_lines([("gpu-budget gate FAILED: the session was interrupted (pytest.exit(): enough for "
                                  "today) after 1 of 1 selected memory-budget test reported: *")])
