"""What a case in its own environment prints is its test's captured output, as a case in the running environment's is.

Its child comes from a helper's forkserver (isolate/remote.py); the helper's
stderr is a temporary file kept for the message of a helper that died, and a
child printing there was seen nowhere: not in a failing test's report, not
under -s.
"""

import re

from inner_session import leave_outer_run
from local_wheels import write_wheel

from gpu_budget.isolate.wheelhouse import VARIABLE

RUNNERS = '''
import sys


def talk(ctx):
    with ctx.meter.phase("load"):
        held = b"\\x01" * (4 << 20)
    print("runner says out", ctx.params["case"])
    print("runner says err", ctx.params["case"], file=sys.stderr)
    return {}
'''

TESTS = '''
import pytest
from gpu_budget import Environment, Scenario

OWN = Environment(requirements=["gbtiny==1.0"])


@pytest.mark.gpu_budget(ram="1 KiB")
def test_over(gpu_budget):
    gpu_budget.measure(Scenario(name="over", run="runners:talk", params={"case": "over"}, environment=OWN))


@pytest.mark.gpu_budget(ram="4 GiB")
def test_within(gpu_budget):
    gpu_budget.measure(Scenario(name="within", run="runners:talk", params={"case": "within"}, environment=OWN))


@pytest.mark.gpu_budget(ram="1 KiB")
def test_running_over(gpu_budget):
    gpu_budget.measure(Scenario(name="running", run="runners:talk", params={"case": "running"}))
'''


def _session(pytester, monkeypatch, tmp_path, *args):
    leave_outer_run(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv(VARIABLE, str(tmp_path / "house"))
    write_wheel(tmp_path / "house", "1.0")
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_mem=TESTS)
    return pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
                                         "--gpu-budget", f"--gpu-budget-envs={tmp_path / 'envs'}", *args)


def _failure(out: str, test: str) -> str:
    """The part of the terminal's text that reports `test`'s failure."""
    return re.split(r"\n_{3,} test_\w+ _{3,}\n|\n={3,} ", out.split(f" {test} ", 1)[1], maxsplit=1)[0]


def test_a_failing_case_shows_what_it_printed_and_a_passing_one_nothing(pytester, monkeypatch, tmp_path):
    result = _session(pytester, monkeypatch, tmp_path)
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    for test, case in (("test_over", "over"), ("test_running_over", "running")):  # own environment, running one
        failure = _failure(out, test)
        stdout, stderr = failure.partition("Captured stdout call")[2], failure.partition("Captured stderr call")[2]
        assert f"runner says out {case}" in stdout and f"runner says err {case}" in stderr, failure
    assert "runner says out within" not in out and "runner says err within" not in out, out


def test_under_s_what_it_prints_comes_through(pytester, monkeypatch, tmp_path):
    result = _session(pytester, monkeypatch, tmp_path, "-s")
    result.assert_outcomes(passed=1, failed=2)
    seen = result.stdout.str() + result.stderr.str()
    for case in ("over", "within", "running"):
        assert f"runner says out {case}" in seen and f"runner says err {case}" in seen, seen
