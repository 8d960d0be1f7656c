"""The search judges the case and each candidate as the gate does: the growth allowance its baseline's runs widened."""

from gpu_budget.judge.compare import judge
from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.entry import Entry, Spread
from gpu_budget.model.figures import Peaks, Step
from gpu_budget.model.result import Measurement
from gpu_budget.search import remediate

MiB, GiB = 2**20, 2**30
GROWING = Measurement("ok", Peaks(ram=627 * MiB, ram_tree=627 * MiB),
                      steps=tuple(Step(step=k, ram=(600 + 3 * k) * MiB, ram_tree=(600 + 3 * k) * MiB) for k in range(10)))
RECORDED = Spread(5, {}, {"ram_tree": MiB})  # its 5 recorded runs grew up to 1 MiB/step: 6 MiB/step allowed


def test_a_case_the_gate_passes_within_its_recorded_growth_needs_no_remedy_and_a_candidate_like_it_passes():
    """3 MiB/step over 10,000 steps breaks 1 GiB at the clean allowance, not within the 6 MiB/step the case's recorded
    runs allow. Before, the gate passed the case ("within its recorded allowance 6.00 MiB/step") while the search
    found it over budget: needs_remedy True, so --gpu-budget-remediate ran real runs for a passing case, and a
    candidate measuring what the case did read "over-budget"."""
    budget = Budget(ram=GiB)
    verdict = judge(GROWING, budget, Entry(GROWING.peaks, spread=RECORDED), Tolerance(rel=0.005, abs=4 * MiB),
                    steps=10_000, ci=False, update=False)
    assert verdict.passed and "within its recorded allowance 6.00 MiB/step" in verdict.message
    assert not remediate.needs_remedy(GROWING, budget, 10_000, RECORDED)
    assert remediate.trial_outcome(GROWING, budget, 10_000, RECORDED).verdict == "pass"
    assert remediate.needs_remedy(GROWING, budget, 10_000)  # no runs recorded: the clean allowance, as the gate's
    assert remediate.trial_outcome(GROWING, budget, 10_000).verdict == "over-budget"
