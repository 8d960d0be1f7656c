"""judge/reached.py and its verdicts: a run that did not reach every phase its baseline measured is an error naming
them, not "improved" (its peaks cover less of the run); an update records the run as it is now. Under --against,
head is held to the phases every base run reached, unless the case's params changed."""

import pytest

from gpu_budget.against.verdict import judge_case
from gpu_budget.judge.compare import judge
from gpu_budget.judge.reached import said, unreached
from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.entry import Entry
from gpu_budget.model.figures import Peaks, PhaseRecord
from gpu_budget.model.result import Measurement, Result, Verdict

MiB = 2**20
TOL = Tolerance(rel=0.02, abs=16 * MiB)
STEPS = [f"train_step_{n}" for n in range(1, 31)]


def run(ram: int, names: list[str]) -> Measurement:
    return Measurement("ok", Peaks(ram=ram, vram_allocated=None),
                       phases={n: PhaseRecord(n, ram_peak=ram) for n in names})


def entry(ram: int, names: list[str]) -> Entry:
    return Entry(peaks=Peaks(ram=ram, vram_allocated=None), phases={n: Peaks(ram=ram, vram_allocated=None) for n in names})


def test_a_run_that_stopped_short_of_its_baselines_steps_is_an_error_not_improved():
    """Its 12 of 30 steps read lower; before, "improved" and passed: the 18 steps never gated."""
    j = judge(run(800 * MiB, ["load", "data", *STEPS[:12]]), Budget(), entry(1000 * MiB, ["load", "data", *STEPS]),
              TOL, ci=True, update=False)
    assert (j.verdict, j.passed, j.write_baseline) == ("error", False, False)
    assert j.message == (
        "the run did not reach 18 of the 32 phases its baseline measured (train_step_13..30; it measured data, load, "
        "train_step_1..12): its peaks cover less of the run than its baseline's, so they are not compared; a run that "
        "now stops sooner on purpose is re-recorded with --gpu-budget-update")
    assert round(j.change["ram"], 2) == -0.2  # its change still shown


def test_a_training_that_did_not_run_at_all_is_an_error_even_within_the_baselines_tolerance():
    j = judge(run(1000 * MiB, ["load"]), Budget(), entry(1000 * MiB, ["load", "train_step_1", "train_step_2"]),
              TOL, ci=True, update=False)
    assert (j.verdict, j.passed) == ("error", False)
    assert "did not reach 2 of the 3 phases its baseline measured (train_step_1..2; it measured load)" in j.message


def test_an_update_records_the_shortened_run_as_it_is_now():
    j = judge(run(800 * MiB, STEPS[:12]), Budget(), entry(1000 * MiB, STEPS), TOL, ci=True, update=True)
    assert (j.verdict, j.passed, j.write_baseline) == ("pass", True, True)
    assert j.message == "the run did not reach 18 of the 30 phases its baseline measured (train_step_13..30); baseline updated"


def test_phases_gained_or_a_baseline_without_phases_are_compared_as_before():
    gained = judge(run(1000 * MiB, ["load", *STEPS]), Budget(), entry(1000 * MiB, STEPS[:3]), TOL, ci=True, update=False)
    assert (gained.verdict, gained.passed) == ("pass", True)
    old = judge(run(800 * MiB, ["load"]), Budget(), Entry(peaks=Peaks(ram=1000 * MiB, vram_allocated=None)), TOL,
                ci=True, update=False)
    assert old.verdict == "improved"  # a baseline that kept no phases: nothing to tell a short run by


def test_a_budget_breach_is_said_first():
    j = judge(run(2000 * MiB, ["load"]), Budget(ram=1024 * MiB), entry(1000 * MiB, ["load", "train_step_1"]), TOL,
              ci=True, update=False)
    assert j.verdict == "over-budget"


@pytest.mark.parametrize(("names", "shown"), [
    (["train_step_3", "train_step_4", "train_step_5"], "train_step_3..5"),
    (["eval_epoch_1", "train_step_2", "train_step_4"], "eval_epoch_1, train_step_2, train_step_4"),
    (["a1", "a2", "b", "c", "d", "e", "f", "g"], "a1..2, b, c, d, e, f and 1 more"),
    (["step_9", "step_10", "step_11"], "step_9..11"),
    ([], ""),
])
def test_missed_phases_are_said_with_numbered_runs_as_ranges(names, shown):
    assert said(names) == shown


def test_unreached_orders_numbers_as_numbers():
    assert unreached(["load"], ["train_step_10", "train_step_2", "load", "eval"]) == ["eval", "train_step_2",
                                                                                    "train_step_10"]


def sided(ram: int, names: list[str], params: dict | None = None) -> Result:
    return Result(nodeid="t.py::test_a", scenario="a", scale="tiny", verdict=Verdict.NO_BASELINE, passed=True,
                  message="ok", tolerance=TOL, params=params, measurement=run(ram, names))


def test_against_a_head_short_of_the_phases_every_base_run_reached_is_an_error():
    """Before, head's 12 steps of base's 30 read "improved" and passed."""
    base = [sided(1000 * MiB, ["load", *STEPS])] * 2
    case = judge_case("t.py::test_a", base, [sided(800 * MiB, ["load", *STEPS[:12]])] * 2)
    assert (case.status, case.passed) == ("error", False)
    assert case.message.startswith("at head: the run did not reach 18 of the 31 phases base measured "
                                   "(train_step_13..30; it measured load, train_step_1..12): its peaks cover less of "
                                   "the run than base's, so they are not compared; a case shortened on purpose by a "
                                   "knob of its scenario"), case.message


def test_against_a_head_whose_params_changed_is_judged_on_its_figures_the_change_named():
    base = [sided(1000 * MiB, ["load", *STEPS], {"steps": 30})] * 2
    case = judge_case("t.py::test_a", base, [sided(800 * MiB, ["load", *STEPS[:12]], {"steps": 12})] * 2)
    assert (case.status, case.passed) == ("improved", True)
    assert "params changed since base: steps 30 -> 12" in case.message


def test_against_a_phase_some_base_run_missed_is_not_held_against_head():
    base = [sided(1000 * MiB, ["load", *STEPS[:3], "eval"]), sided(1000 * MiB, ["load", *STEPS[:3]])]
    case = judge_case("t.py::test_a", base, [sided(1000 * MiB, ["load", *STEPS[:3]])] * 2)
    assert (case.status, case.passed) == ("pass", True)


def test_the_run_after_a_block_its_baseline_kept_is_not_required_where_the_block_was_reached():
    """'after eval' (what a runner does after `with ctx.meter.phase("eval")`) is kept only where it passed the phase
    before by more than the interpreter's noise (gaps.GAP_NOISE): a baseline that kept it failed every run whose
    gap stayed within that noise ("the run did not reach 3 of the 6 phases its baseline measured (after eval, after
    eval (2), after load; ..."). A block not reached still is."""
    names = ["load", "after load", "eval", "after eval", "eval (2)", "after eval (2)"]
    base = entry(1000 * MiB, names)
    kept = judge(run(1000 * MiB, ["load", "eval", "eval (2)"]), Budget(), base, TOL, ci=True, update=False)
    assert (kept.verdict, kept.passed) == ("pass", True), kept.message
    short = judge(run(1000 * MiB, ["load", "eval"]), Budget(), base, TOL, ci=True, update=False)
    assert (short.verdict, short.passed) == ("error", False)
    assert "did not reach 1 of the 6 phases its baseline measured (eval (2); it measured eval, load)" in short.message


def test_a_runners_lead_in_its_baseline_kept_is_not_required_of_a_run_that_measured_phases():
    """'run', what a runner does before its first phase, is kept only where it passed the phase after it by more
    than noise (meter.Meter.lead_in)."""
    base = entry(1000 * MiB, ["run", "load", "train_step_1"])
    kept = judge(run(1000 * MiB, ["load", "train_step_1"]), Budget(), base, TOL, ci=True, update=False)
    assert (kept.verdict, kept.passed) == ("pass", True), kept.message
    assert unreached([], ["run"]) == ["run"]  # a run that measured nothing at all still missed it
