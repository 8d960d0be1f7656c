"""A regression names where it began: the first phase past its own baseline phase, or, where that phase is new to
the run (an evaluation added, a phase renamed beside the one its baseline kept), past the baseline's peak."""

from gpu_budget.judge.compare import judge
from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.entry import Entry
from gpu_budget.model.figures import Peaks, PhaseRecord
from gpu_budget.model.result import Measurement

MiB = 2**20
TOL = Tolerance(rel=0.02, abs=16 * MiB)


def run(figures: dict[str, int]) -> Measurement:
    return Measurement("ok", Peaks(ram=max(figures.values()), vram_allocated=None),
                       phases={n: PhaseRecord(n, ram_peak=v) for n, v in figures.items()})


def entry(figures: dict[str, int]) -> Entry:
    return Entry(peaks=Peaks(ram=max(figures.values()), vram_allocated=None),
                 phases={n: Peaks(ram=v, vram_allocated=None) for n, v in figures.items()})


def test_a_regression_in_a_phase_its_baseline_lacks_is_named():
    """Before, an 8x peak in a new phase read `ram 800.00 MiB > baseline 100.00 MiB +2.0% +16.00 MiB`, naming none."""
    j = judge(run({"load": 100 * MiB, "eval": 800 * MiB, "train_step_1": 90 * MiB}), Budget(),
              entry({"load": 100 * MiB, "train_step_1": 90 * MiB}), TOL, ci=True, update=False)
    assert j.verdict == "regression"
    assert j.message.endswith("first past the baseline's peak in eval, a phase its baseline lacks"), j.message


def test_a_phase_past_its_own_baseline_phase_is_named_before_a_later_new_one():
    j = judge(run({"load": 100 * MiB, "train_step_1": 300 * MiB, "eval": 800 * MiB}), Budget(),
              entry({"load": 100 * MiB, "train_step_1": 90 * MiB}), TOL, ci=True, update=False)
    assert j.message.endswith("first past its baseline in train_step_1"), j.message
