"""What the remediation search says where no set passed: only what its runs showed, beside the case's own figure."""

import json

from failing_case import search

from gpu_budget import Fix, Scenario
from gpu_budget.declare import fixes
from gpu_budget.declare.marks import default_tolerance
from gpu_budget.declare.marks import gpu_budget as mark
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Measurement, Result, Verdict
from gpu_budget.report.terminal import remediation_text
from gpu_budget.search import remediate

MiB = 2**20
UP = fixes.register(Fix("trt_up", "train", "holds more", cost="slower"))
UP_TOO = fixes.register(Fix("trt_up_too", "runtime", "holds more too", cost="slower"))
BUDGET = mark(ram="100 MiB").budget


def case(ram, rem):
    return Result("n::t", "toy", "tiny", Verdict.OVER_BUDGET, False, "", budget=BUDGET,
                  measurement=Measurement("ok", Peaks(ram=ram)), remediation=rem)


def test_a_lowest_set_above_the_cases_own_figure_is_said_to_lower_nothing():
    """Every fix raised the peak (a fix that makes it worse): the case read 101 MiB, its sets 105 to 112. Before:
    "...none of the 3 valid sets of trt_up, trt_up_too passed (all measured); the lowest: +trt_up (RAM 105.00 MiB)",
    read as the nearest thing to a remedy, while running no fix at all reads lower."""
    def worse(candidate):
        raised = {"trt_up": 4, "trt_up_too": 6}
        peak = (101 + sum(raised[f] for f in candidate.fixes)) * MiB
        return remediate.trial_outcome(Measurement("ok", Peaks(ram=peak)), BUDGET)

    none = search(Scenario(name="toy", run="m:f", supports=(UP, UP_TOO)), worse)
    text = remediation_text(none, case(101 * MiB, none))
    assert text.endswith("; the lowest: +trt_up (RAM 105.00 MiB), no lower than the case's own RAM 101.00 MiB "
                         "(inside its noise or above it): no set run lowered the peak")
    assert remediation_text(none).endswith("; the lowest: +trt_up (RAM 105.00 MiB)")  # no case to compare with
    tol = default_tolerance("tiny")
    inside = case(int(105 * MiB + (tol.limit(105 * MiB) - 105 * MiB) / 2), none)  # above 105 MiB, by less than noise
    assert remediation_text(none, inside).endswith("no set run lowered the peak")
    below = case(int(tol.limit(105 * MiB)) + MiB, none)  # above 105 MiB by more than the noise: +trt_up lowered it
    assert remediation_text(none, below).endswith("; the lowest: +trt_up (RAM 105.00 MiB)")


RUNNER = '''
def deep(ctx):
    """Holds `mib` MiB; trt_trim takes 40 off, and trt_deep (trt_paired), read only where trt_trim is on, 100 more."""
    mib = ctx.params["mib"]
    if ctx.has("trt_trim"):
        mib -= 40
        if ctx.has("trt_deep") or ctx.has("trt_paired"):
            mib -= 100
    with ctx.meter.phase("load"):
        held = b"\\x01" * (mib << 20)
    for step in (1, 2):
        with ctx.meter.phase(f"train_step_{step}", step=step):
            pass
    return {"held": len(held)}
'''

TESTS = '''
from gpu_budget import Fix
from gpu_budget.declare import fixes

TRIM = fixes.register(Fix("trt_trim", "runtime", "holds 40 MiB less", cost="slower"))
DEEP = Fix("trt_deep", "runtime", "holds 100 MiB less beside trt_trim")
PAIRED = Fix("trt_paired", "runtime", "holds 100 MiB less beside trt_trim", requires=("trt_trim",))

@pytest.mark.gpu_budget(ram="200 MiB", expect="over-budget")
def test_alone(gpu_budget):
    gpu_budget.measure(Scenario(name="alone", run="runners_deep:deep", params={"mib": 300}, supports=(DEEP, TRIM)))

@pytest.mark.gpu_budget(ram="200 MiB", expect="over-budget")
def test_paired(gpu_budget):
    gpu_budget.measure(Scenario(name="paired", run="runners_deep:deep", params={"mib": 300}, supports=(PAIRED, TRIM)))
'''


def test_a_fix_read_only_beside_another_leaves_no_claim_that_no_set_passes(project):
    """trt_deep alone reads "not applied" (its runner reads it only under trt_trim), so the set of both, which passes,
    is never run. Before: "remediation: no set of this scenario's fixes brings it within budget: none of the 2 sets run
    of trt_deep, trt_trim passed (all measured); 1 set holding trt_deep, ... was not run": a claim no run showed.
    Declared in its requires=, the same fix is run with its companion, and the pair is the answer."""
    pytester = project(TESTS)
    pytester.makepyfile(runners_deep=RUNNER)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-remediate",
                                           "--gpu-budget-json=report.json")
    result.assert_outcomes(passed=2)
    rows = {r["nodeid"].split("::")[-1]: r["remediation"] for r in json.loads((pytester.path / "report.json").read_text())["results"]}
    alone, paired = rows["test_alone"], rows["test_paired"]
    assert alone["status"] == "none-passes" and alone["unapplied"] == {"trt_deep": 1}
    assert paired["status"] == "found" and sorted(paired["found"]) == ["trt_paired", "trt_trim"]
    out = result.stdout.str()
    assert "brings it within budget" not in out
    result.stdout.fnmatch_lines([("*test_alone*remediation: none of the 2 sets run of trt_deep, trt_trim passed (all "
                                  "measured); 1 set holding trt_deep, which its runner reported not applied alone, was "
                                  "not run (a fix applied only beside another is run with it where its requires= names "
                                  "that one)*")])
