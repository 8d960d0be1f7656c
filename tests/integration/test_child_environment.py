"""A measured child runs with the environment its test has as it calls measure(), whichever test started the forkserver."""

import json

RUNNERS = '''
import os


def sees(ctx):
    with ctx.meter.phase("train_step_1", step=1):
        pass
    return {"seen": os.environ.get("MY_KNOB", "unset")}
'''

TESTS = '''
import sys
import pytest
from gpu_budget import Scenario

SAYS = "import os; open('seen', 'a').write(os.environ.get('MY_KNOB', 'unset') + chr(10))"


@pytest.mark.parametrize("value", ["first", "second", None])
@pytest.mark.parametrize("kind", ["runner", "command"])
@pytest.mark.gpu_budget(ram="8 GiB")
def test_knob(gpu_budget, monkeypatch, kind, value):
    if value is None:
        monkeypatch.delenv("MY_KNOB", raising=False)
    else:
        monkeypatch.setenv("MY_KNOB", value)
    if kind == "runner":
        row = gpu_budget.measure(Scenario(name="r", run="runners:sees"))
        seen = row.info["seen"]
    else:
        gpu_budget.measure(Scenario(name="c", command=[sys.executable, "-c", SAYS]))
        seen = open("seen").read().splitlines()[-1]
    assert seen == (value or "unset")
'''


def test_each_child_sees_its_test_s_environment(pytester, monkeypatch):
    """The forkserver's environment was the one of the test that started it: its monkeypatch.setenv reached every
    later child of the session, and no later test's did ("first" seen by the tests that set "second" or nothing)."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("MY_KNOB", "the session's")
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_mem=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget",
                                           "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=6)
    rows = json.loads((pytester.path / "r.json").read_text())["results"]
    assert len(rows) == 6
