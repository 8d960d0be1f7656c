"""A passing set beside a case whose baseline stored how far its fresh runs spread: a pass inside that is noise too."""

from gpu_budget.model.budget import Budget
from gpu_budget.model.entry import Entry, Spread
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Measurement, Remediation, Result, Trial, Verdict
from gpu_budget.report.terminal import remediation_lines, remediation_text

MiB = 2**20
FOUND = Remediation("found", ("trim",), ("trim",), (), Peaks(ram=985 * MiB), 1, 8,
                    (Trial(("trim",), Verdict.PASS, Peaks(ram=985 * MiB)),), lattice=("trim",))
NOISE = ("; its RAM is inside 6x the spread of the case's baseline runs (20.00 MiB over 5 runs) of the case's own "
         "1000.00 MiB, so the pass may be run-to-run noise, not the fixes")


def case(spread):
    baseline = Entry(Peaks(ram=900 * MiB), spread=spread)
    return Result("n::t", "toy", "tiny", Verdict.OVER_BUDGET, False, "", budget=Budget(ram=990 * MiB), baseline=baseline,
                  measurement=Measurement("ok", Peaks(ram=1000 * MiB)), remediation=FOUND)


def test_a_pass_inside_the_spread_the_cases_baseline_stored_says_it_may_be_noise():
    """The case's baseline stored a 20 MiB spread over 5 fresh runs (the gate allows 6x it); a set 15 MiB lower passes,
    outside the tolerance (0.5% + 4 MiB) but well inside that spread. Before: "remediation: passes with +trim (RAM
    985.00 MiB), found in 1 real run (bound 8)" and no word of noise."""
    noisy = case(Spread(5, {"ram": 20 * MiB}))
    assert remediation_text(FOUND, noisy).endswith("found in 1 real run (bound 8)" + NOISE)
    assert remediation_lines([Result.from_json(noisy.to_json())])[1].endswith(NOISE)  # as a worker's row reads


def test_a_pass_outside_a_narrow_spread_says_nothing_of_noise():
    for spread in (None, Spread(5, {"ram": MiB}), Spread(5, {"vram_allocated": 20 * MiB})):
        assert remediation_text(FOUND, case(spread)).endswith("found in 1 real run (bound 8)")
