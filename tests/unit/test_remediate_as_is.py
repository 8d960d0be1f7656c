"""The remediation search called on a case that passes as it is: no fix is needed, and the answer says so."""

import pytest

from gpu_budget import Fix, Scenario
from gpu_budget.declare import fixes
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Trial
from gpu_budget.report.terminal import remediation_text
from gpu_budget.search import remediate

SMALL = fixes.register(Fix("tra_small", "train", "test fix: saves 100 B"))
LARGE = fixes.register(Fix("tra_large", "train", "test fix: saves 300 B", cost="slower"))
SAVING = {SMALL.name: 100, LARGE.name: 300}


class Case:
    """measure(): a peak of 1000 B less each fix's saving, within `limit` or over it; every candidate it ran."""

    def __init__(self, limit):
        self.limit, self.measured = limit, []

    def __call__(self, candidate):
        self.measured.append(tuple(candidate.fixes))
        peak = 1000 - sum(SAVING[f] for f in candidate.fixes)
        return Trial((), "pass" if peak <= self.limit else "over-budget", Peaks(ram=peak))


def case():
    return Scenario(name="as_is", run="m:f", supports=(SMALL, LARGE))


def test_a_case_within_its_budget_as_it_is_needs_no_fix():
    """Called directly on a case that passes unchanged (1000 B within 1000 B), the search ran +tra_small, saw it pass,
    and answered "passes with +tra_small": a fix as if one were needed. The empty set costs nothing: it is the
    cheapest, and the search now runs it first where the caller gives no run of the case."""
    measure = Case(limit=1000)
    found = remediate.search(case(), measure)
    assert found.status == "not-needed", found
    assert (found.found, found.fixes, found.removed, found.peaks) == ((), (), (), Peaks(ram=1000))
    assert measure.measured == [()] and found.runs == 1 and [t.fixes for t in found.tried] == [()]
    assert remediation_text(found) == ("remediation: none needed: it passes as it is (RAM 1000 B), found in 1 real run "
                                       "(bound 8)")


def test_a_failing_case_is_run_once_as_it_is_then_searched():
    """Its own run counts against the bound and is listed first, with no fixes: the runs said are the runs made."""
    measure = Case(limit=800)
    found = remediate.search(case(), measure)
    assert found.status == "found" and found.found == (LARGE.name,)
    assert measure.measured == [(), (SMALL.name,), (LARGE.name,)] and found.runs == 3


def test_a_run_of_the_case_the_caller_gives_is_not_run_again():
    """The gate has measured the case already and hands its judged run (as_is=): nothing is run twice, and a passing one
    needs no fix without any run."""
    measure = Case(limit=800)
    found = remediate.search(case(), measure, as_is=Trial((), "over-budget", Peaks(ram=1000)))
    assert measure.measured == [(SMALL.name,), (LARGE.name,)] and found.runs == 2 and found.found == (LARGE.name,)
    passing = remediate.search(case(), measure, as_is=Trial((), "pass", Peaks(ram=700)))
    assert passing.status == "not-needed" and passing.runs == 0 and len(measure.measured) == 2
    assert passing.peaks == Peaks(ram=700) and passing.tried == ()


def test_a_case_no_set_saves_counts_its_own_run_apart_from_the_sets():
    """Its own run is a real run (found in N real runs counts it) but no set of fixes, nor the lowest set measured."""
    found = remediate.search(case(), Case(limit=100))
    assert found.status == "none-passes" and found.runs == 4
    assert remediation_text(found) == ("remediation: no set of this scenario's fixes brings it within budget: none of "
                                       "the 3 valid sets of tra_small, tra_large passed (all measured); the lowest: "
                                       "+tra_small +tra_large (RAM 600 B)")
    bound = remediate.search(case(), Case(limit=100), max_runs=1)
    assert remediation_text(bound) == ("remediation: none of the 1 real run (bound 1) passed; 3 set(s) left untried, "
                                       "none cheaper than those run (raise --gpu-budget-remediate-max-runs)")


def test_an_as_is_that_is_no_trial_is_named_before_any_run():
    measure = Case(limit=1000)
    with pytest.raises(TypeError, match=r"^as_is='pass': expected a Trial \(remediate.trial_outcome of the case's own "
                                        r"run\), or None: the search runs the case first$"):
        remediate.search(case(), measure, as_is="pass")
    assert measure.measured == []
