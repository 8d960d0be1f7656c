"""meter_callback refuses, naming it, an argument that would otherwise fail only once the Trainer trains."""

import pytest

pytest.importorskip("transformers")

RUNNER = '''
import gc

import gpu_budget


def run(ctx):
    ctx.meter.start("train_setup")
    given = {"ctx": lambda: gpu_budget.meter_callback(ctx),
             "after_each": lambda: gpu_budget.meter_callback(ctx.meter, after_each=gc.collect()),
             "train_end": lambda: gpu_budget.meter_callback(ctx.meter, train_end=""),
             "good": lambda: gpu_budget.meter_callback(ctx.meter, after_each=gc.collect)}
    given[ctx.params["given"]]()


def prepare(ctx):
    gpu_budget.meter_callback(ctx.meter)
'''

TESTS = r'''
import re

import pytest
from gpu_budget import Scenario

RUN = Scenario(name="arguments", run="runner:run")


@pytest.mark.gpu_budget
def test_refused(gpu_budget):
    def message(scenario):
        return gpu_budget.peak(scenario).error.message

    assert message(RUN.with_params(given="ctx")) == (
        "meter_callback(meter): expected the run's meter, ctx.meter, got a RunContext: pass ctx.meter, not ctx")
    assert re.fullmatch(r"meter_callback\(after_each=\.\.\.\): expected a function to call as each step and "
                        r"evaluation ends \(gc\.collect, not gc\.collect\(\)\), got \d+ \(int\)",
                        message(RUN.with_params(given="after_each")))
    assert message(RUN.with_params(given="train_end")) == (
        "meter_callback(train_end=...): expected a phase name or None, got '' (str)")
    with pytest.raises(Exception, match=re.escape(
            "failed (exception): meter_callback(meter): expected the run's meter, ctx.meter, got None: "
            "ctx.meter is None in prepare(ctx), where nothing is measured")):
        gpu_budget.peak(Scenario(name="in_prepare", prepare="runner:prepare", run="runner:run", params={"given": "good"}))
    assert gpu_budget.peak(RUN.with_params(given="good")).ok
'''


def test_a_meter_callback_of_a_wrong_argument_fails_where_it_is_made(pytester, monkeypatch):
    """meter_callback(ctx) (ctx.meter meant), ctx.meter in prepare (None there), after_each=gc.collect() (its
    result, not the function): each failed only at the Trainer's first event, as "'RunContext' object has no
    attribute 'start'" or "'int' object is not callable" from inside its loop, naming neither meter_callback nor the
    argument."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload = torch transformers\n")
    pytester.makepyfile(runner=RUNNER, test_arguments=TESTS)
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=1)
