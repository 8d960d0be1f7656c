"""The remediation search: its lattice logic with a stand-in measure, then end to end with real children."""

import json
import re
import subprocess
import sys
from itertools import combinations

import pytest
from failing_case import search

from gpu_budget import Fix, FixError, Scenario
from gpu_budget.declare import fixes
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Failure, Trial
from gpu_budget.search import remediate

MiB = 2**20
BASE = 1000


def fix(name, cost="none", **kw):
    return fixes.register(Fix(f"trm_{name}", "train", f"test fix {name}", cost=cost, **kw))


A = fix("a")                                   # cost 1, no effect
B = fix("b", "slower")                         # cost 2
D = fix("d", "slower")                         # cost 2
C = fix("c", "accuracy-risk")                  # cost 3
PKG = fix("pkg", needs=("no_such_package_xyz",))
GPU = fix("gpu", needs=("cuda",))
X = fix("x", "slower", conflicts=("trm_d",))
Y = fix("y", requires=("trm_b",))
KNOB = fix("knob", remedy=False)
SAVING = {A.name: 0, B.name: 100, D.name: 150, C.name: 400, PKG.name: 900, GPU.name: 900, X.name: 10, Y.name: 10,
          KNOB.name: 900}


class Stand:
    """measure(): the peak is BASE minus each applied fix's saving; passes at or under `limit`."""

    def __init__(self, limit):
        self.limit, self.measured = limit, []

    def __call__(self, candidate):
        self.measured.append(set(candidate.fixes))
        peak = BASE - sum(SAVING.get(f, 0) for f in candidate.fixes)
        return Trial((), "pass" if peak <= self.limit else "over-budget", Peaks(ram=peak))


def toy(*supports, fixes_=()):
    return Scenario(name="toy", run="m:f", supports=supports, fixes=fixes_)


def test_cheapest_passing_set_found_and_nothing_after_it():
    stand = Stand(limit=760)
    found = search(toy(A, B, D, C), stand)
    assert found.status == "found" and found.found == ("trm_c",) and found.peaks == Peaks(ram=600)
    # cost order: a (1), b, d (2), then c (3) before the pairs of cost 3 and 4, e.g. b+d (750, also passing)
    assert [t.fixes for t in found.tried] == [("trm_a",), ("trm_b",), ("trm_d",), ("trm_c",)]
    assert found.runs == len(stand.measured) == 4 and found.bound == remediate.DEFAULT_MAX_RUNS
    assert not any(s > {"trm_c"} for s in stand.measured)  # no superset of the passing set is run


def test_fewer_fixes_win_a_cost_tie_then_the_listed_order():
    stand = Stand(limit=0)
    search(toy(C, A, B), stand, max_runs=7)
    assert stand.measured == [{"trm_a"}, {"trm_b"}, {"trm_c"}, {"trm_a", "trm_b"}, {"trm_a", "trm_c"},
                              {"trm_b", "trm_c"}, {"trm_a", "trm_b", "trm_c"}]


def test_a_cost_tie_between_sets_of_one_size_goes_to_the_listed_order_not_the_cost_order():
    """Listed p (slower), q, r (none), s (slower): the pairs of cost 3 in listed order are p+q, p+r, q+s, r+s. Before,
    the walk took them in the order of the fixes sorted by cost (q, r, p, s): q+p, q+s, r+p, and answered q+s where
    the docs promise p+r, both passing."""
    p, q, r, s_ = fix("tie_p", "slower"), fix("tie_q"), fix("tie_r"), fix("tie_s", "slower")
    saving = {p.name: 30, q.name: 10, r.name: 30, s_.name: 50}
    measured = []

    def measure(candidate):
        measured.append(set(candidate.fixes))
        peak = BASE - sum(saving[f] for f in candidate.fixes)
        return Trial((), "pass" if peak <= BASE - 58 else "over-budget", Peaks(ram=peak))

    found = search(toy(p, q, r, s_), measure, max_runs=20)
    assert set(found.found) == {"trm_tie_p", "trm_tie_r"}
    assert measured[-2:] == [{"trm_tie_p", "trm_tie_q"}, {"trm_tie_p", "trm_tie_r"}]


def test_no_set_saves_it_reported_clearly():
    stand = Stand(limit=100)
    found = search(toy(A, B, C), stand)
    assert found.status == "none-passes" and found.found is None and found.runs == 7 and found.untried == 0
    assert len(stand.measured) == 7 == len({frozenset(s) for s in stand.measured})  # every set once


def test_a_fix_whose_requirement_is_missing_is_never_run():
    stand = Stand(limit=300)  # only PKG or GPU (900 saved each) could bring it there alone
    found = search(toy(PKG, GPU, B, C), stand)
    assert found.skipped == {"trm_pkg": "needs no_such_package_xyz", "trm_gpu": "needs cuda"}
    assert not any({"trm_pkg", "trm_gpu"} & s for s in stand.measured)
    assert found.status == "none-passes" and found.lattice == ("trm_b", "trm_c")
    with_gpu = search(toy(PKG, GPU, B, C), Stand(limit=300), cuda=True)
    assert with_gpu.found == ("trm_gpu",) and with_gpu.runs == 1 and "trm_gpu" not in with_gpu.skipped


def test_runs_stay_within_the_bound():
    stand = Stand(limit=0)
    found = search(toy(A, B, D, C, X), stand, max_runs=4)
    assert found.status == "bound-reached" and found.runs == 4 == len(stand.measured) and found.bound == 4
    valid = sum(1 for k in range(1, 6) for s in combinations("abdcx", k) if not {"d", "x"} <= set(s))
    assert found.untried == valid - 4


def test_conflicting_and_incomplete_sets_are_never_built():
    stand = Stand(limit=0)
    search(toy(B, D, X, Y, KNOB), stand, max_runs=100)
    assert stand.measured and not any({"trm_d", "trm_x"} <= s for s in stand.measured)
    assert all("trm_b" in s for s in stand.measured if "trm_y" in s)
    assert not any("trm_knob" in s for s in stand.measured)  # a knob, not a remedy


def test_a_fix_setting_a_param_an_applied_fix_sets_otherwise_is_named_not_silently_dropped():
    """trm_short sets `mib` to 10 where the applied trm_long set it to 50: no set holding it can be built. Before, the
    search ran nothing and said "no fix to try (none offered, all applied, or none runnable here)", none of which
    was so, and trm_short was in no "not tried" line."""
    from gpu_budget.report.terminal import remediation_text

    long_ = fix("long", remedy=False, params={"mib": 50})
    short = fix("short", params={"mib": 10})
    stand = Stand(limit=0)
    found = search(Scenario(name="s", run="m:f", params={"mib": 200}, supports=(long_, short))
                             .with_fixes(long_.name), stand)
    assert not stand.measured and found.status == "no-candidates"
    assert found.skipped == {short.name: "conflicts with trm_long, already applied (both set mib)"}, found.skipped
    assert remediation_text(found) == "remediation: no fix to try (none offered, all applied, or none runnable here)"


def test_a_replacing_fix_swaps_out_the_applied_one():
    stand = Stand(limit=BASE - 1)
    full, rows = fix("full_rows", remedy=False), fix("new_rows", replaces=("trm_full_rows",))  # S3's shape
    base = Scenario(name="s3", run="m:f", fixes=(KNOB.name, full.name), supports=(KNOB, full, rows))
    SAVING[rows.name] = 500
    found = search(base, stand)
    assert found.found == (rows.name,) and found.removed == (full.name,)
    assert found.fixes == (KNOB.name, rows.name)


def test_a_crashed_candidate_is_recorded_and_the_search_goes_on():
    def measure(candidate):
        if "trm_a" in candidate.fixes:
            return Trial((), "error", Peaks(), "measured child failed (oom)")
        return Trial((), "pass", Peaks(ram=1))

    found = search(toy(A, B), measure)
    assert [t.verdict for t in found.tried] == ["error", "pass"] and found.found == ("trm_b",)


def test_a_report_never_claims_a_crashed_set_was_measured():
    """A set whose child crashed has no peak: "no set brings it within budget (all measured)" and "the cheapest
    passing set" would claim what no run showed."""
    from gpu_budget.report.terminal import remediation_text

    def measure(candidate, passing=frozenset()):
        if "trm_a" in candidate.fixes:
            return Trial((), "error", Peaks(), "measured child failed (exception): KeyError: 'x'")
        return Trial((), "pass" if set(candidate.fixes) & passing else "over-budget", Peaks(ram=BASE))

    none = search(toy(A, B), measure)
    assert none.status == "none-passes" and [t.verdict for t in none.tried] == ["error", "over-budget", "error"]
    assert remediation_text(none) == ("remediation: none of the 3 valid sets of trm_a, trm_b passed: 1 measured over "
                                      "budget, 2 failed with an error (not measured); the lowest: +trm_b (RAM 1000 B)")
    found = search(toy(A, C), lambda c: measure(c, frozenset({"trm_c"})))
    assert found.found == ("trm_c",) and remediation_text(found).endswith(
        "found in 2 real runs (bound 8); 1 set tried before it failed with an error (not measured), so it may not be "
        "the cheapest")
    bound = search(toy(A, B), measure, max_runs=2)
    assert "none of the 2 real runs (bound 2) passed (1 failed with an error, not measured);" in remediation_text(bound)



def noted(applied, passing=frozenset()):
    """measure(): real Measurements judged by trial_outcome, the runner reporting trm_a not applied; a set passes
    (100 MiB budget) when it holds one of `passing`, or by noise when it holds trm_a."""
    from gpu_budget.declare.marks import gpu_budget as mark
    from gpu_budget.model.result import Measurement

    budget = mark(ram="100 MiB").budget

    def measure(candidate):
        under = set(candidate.fixes) & (set(passing) | {"trm_a"})
        notes = {f: "applied" if f in applied else "not applied: this runner has no such switch" for f in candidate.fixes}
        info = {"fixes_applied": notes}
        return remediate.trial_outcome(Measurement("ok", Peaks(ram=(99 if under else 101) * MiB), info=info), budget)

    return measure


def test_a_pass_of_a_fix_its_runner_reports_not_applied_is_not_the_answer():
    """trm_a's runner says it did nothing: its set's pass under the budget is noise, not a remedy. Before, the search
    named it ("remediation: passes with +trm_a"), the cheapest set by cost."""
    from gpu_budget.model.budget import Budget
    from gpu_budget.model.result import Measurement, Result, Verdict
    from gpu_budget.report.terminal import remediation_lines, remediation_text

    found = search(toy(A, B, C), noted({"trm_b", "trm_c"}, passing={"trm_c"}))
    assert found.status == "found" and found.found == ("trm_c",)
    assert [(t.fixes, t.verdict, dict(t.not_applied)) for t in found.tried][:1] == [
        (("trm_a",), "pass", {"trm_a": "not applied: this runner has no such switch"})]
    assert Trial.from_json(found.tried[0].to_json()) == found.tried[0]
    assert remediation_text(found).endswith("found in 3 real runs (bound 8); 1 set tried before it passed only with a "
                                            "fix its runner reports not applied, so not counted")
    none = search(toy(A, B), noted({"trm_b"}))
    assert none.status == "none-passes" and [t.verdict for t in none.tried] == ["pass", "over-budget"]
    assert remediation_text(none) == ("remediation: none of the 2 sets run of trm_a, trm_b passed with its fixes "
                                      "applied: 1 measured over budget, 1 passed only with a fix its runner reports not "
                                      "applied, so not counted; 1 set holding trm_a, which its runner reported not "
                                      "applied alone, was not run (a fix applied only beside another is run with it "
                                      "where its requires= names that one); the lowest: +trm_b (RAM 101.00 MiB)")
    bound = search(toy(A, B, C), noted({"trm_b"}), max_runs=2)
    assert remediation_text(bound).startswith("remediation: none of the 2 real runs (bound 2) passed with its fixes "
                                              "applied (1 passed only with a fix its runner reports not applied, so not "
                                              "counted); 2 set(s) left untried, none cheaper than those run")
    row = Result("n::t", "toy", "tiny", Verdict.OVER_BUDGET, False, "", budget=Budget(ram=100 * MiB),
                 measurement=Measurement("ok", Peaks(ram=101 * MiB)), remediation=none)
    assert "    tried trm_a: RAM 99.00 MiB pass (not counted: trm_a: not applied: this runner has no such switch)" in \
        remediation_lines([row])



def test_no_set_holding_a_fix_its_runner_reported_not_applied_alone_is_run():
    """trm_a alone came back "not applied": every larger set holding it measures the set without it again. Before, they
    were all run (a+b, a+c, a+b+c: 3 wasted real runs of 6) and the report did not say why they measured nothing new."""
    from gpu_budget.model.result import Remediation
    from gpu_budget.report.terminal import remediation_lines, remediation_text

    measured = []
    measure = noted({"trm_b", "trm_c"})

    def logging(candidate):
        measured.append(set(candidate.fixes))
        return measure(candidate)

    none = search(toy(A, B, C), logging)
    assert measured == [{"trm_a"}, {"trm_b"}, {"trm_c"}, {"trm_b", "trm_c"}]
    assert none.status == "none-passes" and dict(none.unapplied) == {"trm_a": 3}
    assert Remediation.from_json(none.to_json()) == none
    assert remediation_text(none).endswith("; 3 sets holding trm_a, which its runner reported not applied alone, "
                                           "were not run (a fix applied only beside another is run with it where its "
                                           "requires= names that one); the lowest: +trm_b (RAM 101.00 MiB)")
    from gpu_budget.model.budget import Budget
    from gpu_budget.model.result import Measurement, Result, Verdict

    row = Result("n::t", "toy", "tiny", Verdict.OVER_BUDGET, False, "", budget=Budget(ram=100 * MiB),
                 measurement=Measurement("ok", Peaks(ram=101 * MiB)), remediation=none)
    assert "    not tried: 3 sets holding trm_a (not applied alone)" in remediation_lines([row])


def test_a_pass_inside_the_tolerance_of_the_cases_own_peak_says_it_may_be_noise():
    """The case read 101 MiB against a 100 MiB budget; a set reading 99 MiB passes, but 2 MiB is inside the gate's
    tolerance (0.5% + 4 MiB): the run cannot tell the fixes from noise. Before, "passes with +trm_a (RAM 99.00 MiB)"
    and nothing else."""
    from gpu_budget.model.budget import Budget, Tolerance
    from gpu_budget.model.result import Measurement, Result, Verdict
    from gpu_budget.report.terminal import remediation_lines, remediation_text

    found = search(toy(A, B), noted({"trm_a", "trm_b"}))
    assert found.found == ("trm_a",)

    def case(ram, tolerance=None):
        return Result("n::t", "toy", "tiny", Verdict.OVER_BUDGET, False, "", budget=Budget(ram=100 * MiB),
                      tolerance=tolerance, measurement=Measurement("ok", Peaks(ram=ram * MiB)), remediation=found)

    noise = ("; its RAM is inside the tolerance (0.5% + 4.00 MiB) of the case's own 101.00 MiB, so the pass may be "
             "run-to-run noise, not the fixes")
    assert remediation_text(found, case(101)).endswith("found in 1 real run (bound 8)" + noise)
    assert remediation_lines([case(101)])[1].endswith(noise)
    assert remediation_text(found, case(200)).endswith("found in 1 real run (bound 8)")  # 101 MiB saved: no doubt
    tight = Tolerance(rel=0.0, abs=MiB)  # the case's own tolerance, where it declares one
    assert remediation_text(found, case(101, tight)).endswith("found in 1 real run (bound 8)")
    assert remediation_text(found).endswith("found in 1 real run (bound 8)")  # no case to compare with


def test_a_pass_is_never_called_noise_beside_a_peak_it_is_not_near():
    """A case that died of memory read only what it reached before dying (19 MiB); a set that passes at 99 MiB is
    no noise of that, nor of a case whose own peak is far below it (it broke its budget by its growth). Before,
    both said "its RAM is inside the tolerance (0.5% + 4.00 MiB) of the case's own 19.00 MiB, so the pass may be
    run-to-run noise, not the fixes"."""
    from gpu_budget.model.budget import Budget
    from gpu_budget.model.result import Measurement, Result, Verdict
    from gpu_budget.report.terminal import remediation_text

    found = search(toy(A, B), noted({"trm_a", "trm_b"}))
    assert found.found == ("trm_a",) and found.peaks.ram == 99 * MiB

    def case(measurement):
        return Result("n::t", "toy", "tiny", Verdict.OVER_BUDGET, False, "", budget=Budget(ram=100 * MiB),
                      measurement=measurement, remediation=found)

    died = Measurement("error", Peaks(ram=19 * MiB), error=Failure(kind="oom", message="CUDA out of memory"))
    assert remediation_text(found, case(died)).endswith("found in 1 real run (bound 8)")
    below = Measurement("ok", Peaks(ram=19 * MiB))
    assert remediation_text(found, case(below)).endswith("found in 1 real run (bound 8)")


def crashing(*together):
    """measure(): a set holding every fix of `together` crashes (not of memory); any other is over budget."""
    def measure(candidate):
        measure.measured.append(set(candidate.fixes))
        if set(together) <= set(candidate.fixes):
            return Trial((), "error", Peaks(), "measured child failed (exception): KeyError: 'x'", crashed=True)
        return Trial((), "over-budget", Peaks(ram=BASE))

    measure.measured = []
    return measure


def test_no_set_holding_a_fix_whose_run_crashed_is_run():
    measure = crashing("trm_c")
    found = search(toy(A, B, C), measure)
    assert measure.measured == [{"trm_a"}, {"trm_b"}, {"trm_c"}, {"trm_a", "trm_b"}]  # was all 7 sets
    assert found.status == "none-passes" and found.pruned == {"trm_c": 3}


def test_a_combination_that_crashed_keeps_its_fixes_in_other_sets():
    """a+b crashed while a and b each ran: the combination is to blame, so only sets holding both are left out."""
    measure = crashing("trm_a", "trm_b")
    found = search(toy(A, B, C), measure)
    assert measure.measured == [{"trm_a"}, {"trm_b"}, {"trm_c"}, {"trm_a", "trm_b"}, {"trm_a", "trm_c"},
                                {"trm_b", "trm_c"}]
    assert found.pruned == {"trm_a+trm_b": 1}


def test_a_bound_counts_the_sets_a_crash_leaves_out_apart_from_those_left_untried():
    from gpu_budget.report.terminal import remediation_text

    found = search(toy(A, B, C), crashing("trm_a"), max_runs=2)
    assert found.status == "bound-reached" and found.untried == 2 and found.pruned == {"trm_a": 3}
    assert remediation_text(found) == (
        "remediation: none of the 2 real runs (bound 2) passed (1 failed with an error, not measured); 2 set(s) "
        "left untried, none cheaper than those run (raise --gpu-budget-remediate-max-runs); 3 sets holding trm_a, whose run crashed, "
        "were not run; the lowest: +trm_b (RAM 1000 B)")


def test_an_out_of_memory_death_is_no_crash_a_larger_set_could_not_cure():
    from gpu_budget.declare.marks import gpu_budget as mark
    from gpu_budget.model.result import Measurement

    budget = mark(ram="100 MiB").budget
    oom = Measurement("error", Peaks(ram=None), error=Failure(kind="oom", message="CUDA out of memory"))
    raised = Measurement("error", Peaks(ram=None), error=Failure(kind="exception", message="KeyError: 'x'"))
    assert [remediate.trial_outcome(m, budget).crashed for m in (oom, raised)] == [False, True]


def test_a_command_scenario_is_offered_only_the_fixes_a_command_can_take():
    """A fix without args, env or params cannot apply to a command: never built, so it is not one of the fixes the
    report says were combined ("none of the 1 valid sets of trm_a, trm_args" named a fix no run had). A command
    scenario's supports= refuses such a fix; without supports= every registered fix is offered, and it is skipped."""
    args = fix("args", args=("--small",))
    cmd = Scenario(name="cmd", command=["python", "train.py"])
    found = search(cmd, Stand(limit=0), max_runs=100)
    assert args.name in found.lattice and A.name not in found.lattice
    assert found.skipped[A.name] == "no args, env or params: it cannot apply to a command"


def test_a_fix_that_changes_nothing_in_the_command_is_never_run():
    """Offered every registered fix, a command scenario runs none that leaves its command line as it is:
    fewer_workers sets dataloader_workers, which this command never reads; such a run measures the case again and
    could pass on noise as "the cheapest passing set"."""
    args = fix("cmd_flag", args=("--small",))
    cmd = Scenario(name="cmd", command=["python", "train.py", "--mib", "{mib}"], params={"mib": 300})
    stand = Stand(limit=0)
    found = search(cmd, stand, max_runs=100)
    assert found.skipped["fewer_workers"] == "changes nothing in this command"
    assert {"trm_cmd_flag"} in stand.measured and not any("fewer_workers" in s for s in stand.measured)
    assert args.name in found.lattice and "fewer_workers" not in found.lattice


def test_a_fix_that_sets_a_param_to_its_value_at_the_searched_scale_changes_nothing():
    same = fix("same_n", params={"trm_n": 4})
    cmd = Scenario(name="cmd", command=["python", "train.py", "--n", "{trm_n}"], params={"trm_n": 4},
                   scales={"tiny": {}, "real": {"trm_n": 8}}, supports=(same,))
    assert remediate.lattice(cmd, cuda=False, scale="tiny") == ([], {same.name: "changes nothing in this command"})
    assert remediate.lattice(cmd, cuda=False, scale="real") == ([same], {})
    assert remediate.lattice(cmd, cuda=False) == ([same], {})  # any scale: it changes the real one


def test_a_fix_whose_placeholder_names_no_param_of_the_command_is_left_out_not_a_crash():
    """A registered flag offered to a command without its param: the search raised ValueError, losing the case's
    whole answer; it is left out, saying why."""
    flag = fix("seconds_flag", args=("--max_seconds", "{trm_max_seconds}"))
    other = fix("other_flag", args=("--small",))
    cmd = Scenario(name="cmd", command=["python", "train.py"], params={"mib": 3}, supports=(flag, other))
    stand = Stand(limit=0)
    found = search(cmd, stand)
    assert found.skipped == {flag.name: "command placeholder {trm_max_seconds} in '{trm_max_seconds}' names no param "
                                        "(params: mib; and 'assets')"}
    assert stand.measured == [{other.name}]


def test_a_set_one_of_whose_fixes_changes_nothing_the_others_do_not_is_never_run():
    """A fix that only sets what its companion already sets (its param, read by the companion's argument) changes
    nothing alone-checked (it needs the companion) and nothing in the set: {companion, it} measures {companion}
    again, and could pass on noise as "the cheapest passing set" naming a fix that did nothing."""
    bits = fix("cpn_bits", args=("--bits", "{trm_bits}"), params={"trm_bits": 8})
    same = fix("cpn_same", params={"trm_bits": 8}, requires=(bits.name,))
    small = fix("cpn_small", "slower", args=("--small",))
    cmd = Scenario(name="cmd", command=["python", "train.py"], params={"trm_bits": 32}, supports=(bits, same, small))
    stand = Stand(limit=0)
    found = search(cmd, stand, max_runs=100)
    assert {bits.name, same.name} not in stand.measured and {bits.name, same.name, small.name} not in stand.measured
    assert stand.measured == [{bits.name}, {small.name}, {bits.name, small.name}]
    assert found.status == "none-passes"


def test_a_fix_whose_companion_is_not_tried_is_left_out_and_named():
    """load_in_8bit needs lora where the scenario offers lora: with lora not tried here (its package missing), no set
    holding load_in_8bit can be built, so the report must not name it among the fixes combined."""
    companion = fix("companion", needs=("no_such_package_xyz",))
    needing = fix("needing", requires=("trm_companion",))
    stand = Stand(limit=0)
    found = search(toy(A, companion, needing), stand)
    assert stand.measured == [{"trm_a"}] and found.lattice == ("trm_a",)
    assert found.skipped == {"trm_companion": "needs no_such_package_xyz",
                             "trm_needing": "needs fix trm_companion, not tried here"}


def test_a_fix_whose_companion_no_fix_is_named_stops_the_search_naming_it(monkeypatch):
    """requires=("trm_lroa",), a misspelt companion: the search answered "+trm_misspelt" alone, as if the fix could
    run without the companion it declares. A Scenario offering it is refused when built (test_fixes.py); offered the
    whole library, the search refuses it before any run."""
    monkeypatch.setattr(fixes, "_REGISTRY", dict(fixes._REGISTRY))  # registered for this test alone
    fix("misspelt", requires=("trm_lroa",))
    stand = Stand(limit=BASE)
    with pytest.raises(FixError, match=r"fix 'trm_misspelt' requires 'trm_lroa', which is no registered fix"):
        search(toy(), stand)
    assert stand.measured == []


@pytest.mark.parametrize("field", ["conflicts", "replaces"])
def test_a_fix_whose_conflict_names_no_fix_stops_the_search_naming_it(monkeypatch, field):
    """conflicts=("trm_dd",), a misspelt name: accepted silently, the search ran and answered sets holding the fix and
    the one it meant to keep apart. The fix it names may be registered later, so the check is when the search starts."""
    monkeypatch.setattr(fixes, "_REGISTRY", dict(fixes._REGISTRY))  # registered for this test alone
    misspelt = fix("misspelt", **{field: ("trm_dd",)})
    stand = Stand(limit=BASE)
    with pytest.raises(FixError, match=rf"scenario 'toy': fix 'trm_misspelt' has {field}=\('trm_dd',\): 'trm_dd' is no "
                                       "registered fix"):
        search(toy(misspelt, D), stand)
    assert stand.measured == []
    fix("dd")  # registered after the fix naming it: known when the search starts
    assert search(toy(misspelt, D), Stand(limit=BASE - 1)).status == "found"


def test_walk_is_in_cost_order_and_complete():
    usable, _ = remediate.lattice(toy(C, B, A, D), cuda=False)
    keys = [(sum(remediate.weight(fixes.get(f)) for f in added), len(added))
            for added, _ in remediate.candidates(toy(C, B, A, D), usable)]
    assert keys == sorted(keys) and len(keys) == 15


def test_importing_the_search_does_not_import_torch():
    code = "import sys, gpu_budget.search.remediate, gpu_budget.session.session; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_a_measured_candidate_is_judged_against_the_budget_alone():
    from gpu_budget.declare.marks import gpu_budget as mark
    from gpu_budget.model.result import Measurement

    budget = mark(ram="100 MiB").budget
    over = Measurement("ok", Peaks(ram=101 * 2**20), wall_seconds=2.0)
    within = Measurement("ok", Peaks(ram=99 * 2**20), wall_seconds=2.0)
    oom = Measurement("error", Peaks(ram=None), error=Failure(kind="oom", message="CUDA out of memory"))
    crash = Measurement("error", Peaks(ram=None), error=Failure(kind="exception", message="KeyError: 'x'"))
    assert remediate.trial_outcome(over, budget) == Trial(
        (), "over-budget", over.peaks, "host RAM peak 101.00 MiB > budget 100.00 MiB", 2.0)
    assert remediate.trial_outcome(within, budget).verdict == "pass"
    assert remediate.trial_outcome(oom, budget).message == "measured child failed (oom): CUDA out of memory"
    assert [remediate.needs_remedy(m, budget) for m in (over, within, oom, crash)] == [True, False, True, False]


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_bad_bound_is_named(bad):
    with pytest.raises(ValueError, match=f"max_runs={bad!r}: expected a whole number >= 1"):
        search(toy(A), Stand(0), max_runs=bad)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"scale": "huge"}, ("scale='huge': expected one of tiny, real (the scale measure runs), or None: any of the "
                         "scenario's")),
    ({"cuda": "yes"}, "cuda='yes': expected True or False (whether the measured children have a CUDA GPU)"),
    ({"cuda": None}, "cuda=None: expected True or False (whether the measured children have a CUDA GPU)"),
])
def test_a_bad_scale_or_device_is_named_before_any_run(kwargs, message):
    """scale="huge" judged a command fix at every scale, unsaid; cuda="yes" ran fixes needing a GPU as if one were
    there, and cuda=None left them out as if none were."""
    stand = Stand(0)
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        search(toy(A), stand, **kwargs)
    assert not stand.measured


# -- end to end: real children of a cheap runner ---------------------------------------------------

RUNNER = '''
import json

def shrinkable(ctx):
    """Holds `mib` MiB for the run, less with the fixes; logs the fixes of every real run to `log`."""
    with open(ctx.params["log"], "a") as fh:
        fh.write(json.dumps(list(ctx.fixes)) + "\\n")
    mib = ctx.params["mib"]
    if ctx.has("e2e_halve"):
        mib //= 2
    if ctx.has("e2e_trim"):
        mib -= 40
    if ctx.has("e2e_gpu_only") or ctx.has("e2e_missing_pkg"):
        mib = 0
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

FIXES = [fixes.register(f) for f in (
    Fix("e2e_noop", "runtime", "does nothing"),
    Fix("e2e_trim", "runtime", "holds 40 MiB less", cost="slower"),
    Fix("e2e_halve", "model", "holds half", cost="accuracy-risk"),
    Fix("e2e_gpu_only", "runtime", "holds nothing, on a GPU", needs=("cuda",)),
    Fix("e2e_missing_pkg", "runtime", "holds nothing, with a package", needs=("no_such_package_xyz",)),
)]
S = Scenario(name="shrink", run="runners_fix:shrinkable", params={"mib": 300}, supports=FIXES)

@pytest.mark.gpu_budget(ram="240 MiB", expect="over-budget")
def test_as_reported(gpu_budget):
    gpu_budget.measure(S.with_params(log="as_reported.log"))

@pytest.mark.gpu_budget(ram="60 MiB")
def test_unsaveable(gpu_budget):
    gpu_budget.measure(S.with_params(log="unsaveable.log"))
'''


def logged(pytester, name):
    return [json.loads(line) for line in (pytester.path / name).read_text().splitlines()]


def test_gate_finds_the_passing_set_and_reports_it(project, monkeypatch):
    pytester = project(TESTS)
    pytester.makepyfile(runners_fix=RUNNER)
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-remediate",
                                           "--gpu-budget-json=report.json")
    result.assert_outcomes(passed=1, failed=1)
    rows = {r["nodeid"].split("::")[-1]: r for r in json.loads((pytester.path / "report.json").read_text())["results"]}

    found = rows["test_as_reported"]["remediation"]  # the expected over-budget case keeps its verdict
    assert rows["test_as_reported"]["verdict"] == "over-budget" and rows["test_as_reported"]["passed"]
    assert found["status"] == "found" and found["found"] == ["e2e_halve"] and found["fixes"] == ["e2e_halve"]
    assert [t["fixes"] for t in found["tried"]] == [["e2e_noop"], ["e2e_trim"], ["e2e_halve"]]
    assert found["runs"] == 3 and found["bound"] == 8 and found["peaks"]["ram"] < 240 * MiB
    assert found["tried"][0]["peaks"]["ram"] > 300 * MiB > found["tried"][1]["peaks"]["ram"] > 240 * MiB
    assert found["skipped"] == {"e2e_gpu_only": "needs cuda", "e2e_missing_pkg": "needs no_such_package_xyz"}
    assert logged(pytester, "as_reported.log") == [[], ["e2e_noop"], ["e2e_trim"], ["e2e_halve"]]  # real runs

    none = rows["test_unsaveable"]["remediation"]
    # e2e_noop, not applied alone, is in no larger set that is run: 4 runs, not 7 (each of those 3 measured again
    # the set without it)
    assert none["status"] == "none-passes" and none["found"] is None and none["runs"] == 4
    assert none["unapplied"] == {"e2e_noop": 3}
    runs = logged(pytester, "unsaveable.log")
    assert runs[1:] == [["e2e_noop"], ["e2e_trim"], ["e2e_halve"], ["e2e_trim", "e2e_halve"]]
    result.stdout.fnmatch_lines([
        "*test_as_reported*e2e_*",
        "*remediation (--gpu-budget-remediate)*",
        "*test_as_reported*remediation: passes with +e2e_halve (RAM *MiB), found in 3 real runs (bound 8)",
        "*tried e2e_noop: RAM * over-budget (not counted: e2e_noop: not applied: its runner never read it *",  # it logs
        "*not tried: e2e_gpu_only (needs cuda), e2e_missing_pkg (needs no_such_package_xyz)",
        ("*test_unsaveable*remediation: none of the 4 sets run of e2e_noop, e2e_trim, e2e_halve passed (all measured); "
        "3 sets holding e2e_noop, which its runner reported not applied alone, were not run (a fix applied only beside "
        "another is run with it where its requires= names that one); the lowest: +e2e_* (RAM *)"),
        ("*not tried: e2e_gpu_only (needs cuda), e2e_missing_pkg (needs no_such_package_xyz), 3 sets holding e2e_noop "
        "(not applied alone)"),
    ])
    markdown = summary.read_text()
    assert "#### Remediation" in markdown and "passes with +e2e_halve" in markdown
    assert "(passes with +e2e_halve)" in markdown  # the table's fixes column


def test_gate_search_stops_at_its_bound(project):
    pytester = project(TESTS.replace("def test_unsaveable", "def _unused"))
    pytester.makepyfile(runners_fix=RUNNER)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-remediate",
                                           "--gpu-budget-remediate-max-runs=2", "--gpu-budget-json=report.json")
    result.assert_outcomes(passed=1)
    (row,) = json.loads((pytester.path / "report.json").read_text())["results"]
    rem = row["remediation"]
    # left untried: e2e_halve and e2e_trim+e2e_halve; the 3 sets holding e2e_noop (not applied alone) are never run
    assert rem["status"] == "bound-reached" and rem["runs"] == 2 and rem["bound"] == 2 and rem["untried"] == 2
    assert len(logged(pytester, "as_reported.log")) == 1 + 2
    result.stdout.fnmatch_lines([("*none of the 2 real runs (bound 2) passed; 2 set(s) left untried, none cheaper than those run (raise "
                                 "--gpu-budget-remediate-max-runs); 3 sets holding e2e_noop, which its runner reported "
                                 "not applied alone, were not run*")])


def test_a_misspelt_conflict_is_the_rows_error_naming_it_the_measured_row_kept(project):
    """Before, the search's FixError escaped the case: "failed without a row in the table" and "none reached
    measure()", of a case measured."""
    pytester = project(TESTS.replace('Fix("e2e_noop", "runtime", "does nothing")',
                                     'Fix("e2e_noop", "runtime", "does nothing", conflicts=("e2e_trimm",))'))
    pytester.makepyfile(runners_fix=RUNNER)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-remediate",
                                           "--gpu-budget-json=report.json", "-k", "as_reported")
    result.assert_outcomes(failed=1)
    (row,) = json.loads((pytester.path / "report.json").read_text())["results"]
    assert row["verdict"] == "error" and row["peaks"]["ram"] > 300 * MiB
    assert "remediation not searched: scenario 'shrink': fix 'e2e_noop' has conflicts=('e2e_trimm',): 'e2e_trimm' is " \
           "no registered fix" in row["message"]
    assert logged(pytester, "as_reported.log") == [[]]  # the case's run alone


def test_no_search_without_the_option(project):
    pytester = project(TESTS)
    pytester.makepyfile(runners_fix=RUNNER)
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=report.json")
    assert all("remediation" not in r for r in json.loads((pytester.path / "report.json").read_text())["results"])
    assert len(logged(pytester, "as_reported.log")) == 1


@pytest.mark.parametrize("value", ["0", "many"])
def test_bad_max_runs_is_a_usage_error_naming_it(project, value):
    pytester = project(TESTS)
    result = pytester.runpytest_subprocess("--gpu-budget", f"--gpu-budget-remediate-max-runs={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--gpu-budget-remediate-max-runs='{value}': expected a whole number >= 1*"])


LEAKY_RUNNER = '''
def leaky(ctx):
    """Holds `mib` MiB (half with e2e_leak_halve), then keeps 4 MiB more each of 14 steps: a leak."""
    mib = ctx.params["mib"] // (2 if ctx.has("e2e_leak_halve") else 1)
    with ctx.meter.phase("load"):
        held = b"\\x01" * (mib << 20)
    kept = []
    for step in range(1, 15):
        with ctx.meter.phase(f"train_step_{step}", step=step):
            kept.append(b"\\x01" * (4 << 20))
    return {"held": len(held)}
'''

LEAKY_TESTS = '''
from gpu_budget import Fix
from gpu_budget.declare import fixes

HALVE = fixes.register(Fix("e2e_leak_halve", "model", "holds half", cost="accuracy-risk"))
S = Scenario(name="leaky", run="runners_leak:leaky", params={"mib": 300}, supports=(HALVE,))

@pytest.mark.gpu_budget(ram="300 MiB", steps=10_000)
def test_leaky(gpu_budget):
    gpu_budget.measure(S)

@pytest.mark.gpu_budget(ram="300 MiB", steps=10_000)
def test_leaky_with_the_fix(gpu_budget):
    gpu_budget.measure(S.with_fixes("e2e_leak_halve"))
'''


def test_a_candidate_is_judged_by_the_gates_own_budget_rule_its_growth_projected_too(project):
    """A fix that lowers the peak but keeps a leak the marker's steps= projects past the budget does not pass: the
    gate fails that configuration, so the search must not call it the passing set."""
    pytester = project(LEAKY_TESTS)
    pytester.makepyfile(runners_leak=LEAKY_RUNNER)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-remediate",
                                           "--gpu-budget-json=report.json")
    result.assert_outcomes(failed=2)
    rows = {r["nodeid"].split("::")[-1]: r for r in json.loads((pytester.path / "report.json").read_text())["results"]}
    assert rows["test_leaky_with_the_fix"]["verdict"] == "over-budget"  # the gate's verdict on the candidate's set
    (trial,) = rows["test_leaky"]["remediation"]["tried"]
    assert trial["fixes"] == ["e2e_leak_halve"] and trial["peaks"]["ram"] < 300 * MiB
    assert trial["verdict"] == "over-budget" and "at step 10,000 > budget 300.00 MiB" in trial["message"]
    assert rows["test_leaky"]["remediation"]["status"] == "none-passes"


def test_a_set_that_died_of_memory_is_over_budget_not_an_error_that_leaves_the_answer_in_doubt():
    """A set whose child ran out of memory did not pass: it is over budget, as an exploration counts such a run. As
    an error "not measured" it made the answer say "1 set tried before it failed with an error (not measured), so it
    may not be the cheapest", of the cheapest passing set."""
    from gpu_budget.declare.marks import gpu_budget as mark
    from gpu_budget.model.result import Measurement, Result, Verdict
    from gpu_budget.report.terminal import remediation_lines, remediation_text

    budget = mark(ram="100 MiB").budget
    oom = Measurement("error", Peaks(ram=60 * MiB), error=Failure(kind="oom", message="MemoryError: planted"))

    def measure(candidate):
        if "trm_a" in candidate.fixes:
            return remediate.trial_outcome(oom, budget)
        return remediate.trial_outcome(Measurement("ok", Peaks(ram=90 * MiB)), budget)

    found = search(toy(A, B), measure)
    assert found.found == ("trm_b",) and [t.verdict for t in found.tried] == ["over-budget", "pass"]
    assert remediation_text(found) == "remediation: passes with +trm_b (RAM 90.00 MiB), found in 2 real runs (bound 8)"
    row = Result("n::t", "toy", "tiny", Verdict.OVER_BUDGET, False, "", budget=budget,
                 measurement=Measurement("ok", Peaks(ram=120 * MiB)), remediation=found)
    assert "    tried trm_a: RAM 60.00 MiB over-budget (measured child failed (oom): MemoryError: planted)" in \
        remediation_lines([row])


def test_a_pass_inside_the_tolerance_of_its_set_less_one_fix_says_that_fixs_part_may_be_noise():
    """trm_a alone changed nothing (1000 MiB), trm_b alone read 902 MiB against a 900 MiB budget, and trm_a+trm_b
    passed at 899 MiB: 3 MiB below trm_b's own run, inside the tolerance (0.5% + 4 MiB), so the run cannot tell
    trm_a's part from noise. Before, "passes with +trm_a +trm_b (RAM 899.00 MiB)" and nothing else: the answer asked
    for a fix whose own run showed no effect."""
    from gpu_budget.model.budget import Budget
    from gpu_budget.model.result import Measurement, Result, Verdict
    from gpu_budget.report.terminal import remediation_text

    peaks = {frozenset({A.name}): 1000, frozenset({B.name}): 902, frozenset({A.name, B.name}): 899}

    def measure(candidate):
        peak = peaks.get(frozenset(candidate.fixes), BASE)
        return Trial((), "pass" if peak <= 900 else "over-budget", Peaks(ram=peak * MiB))

    found = search(toy(A, B), measure)
    assert found.found == ("trm_a", "trm_b")
    case = Result("n::t", "toy", "tiny", Verdict.OVER_BUDGET, False, "", budget=Budget(ram=900 * MiB),
                  measurement=Measurement("ok", Peaks(ram=BASE * MiB)), remediation=found)
    assert remediation_text(found, case).endswith(
        "found in 3 real runs (bound 8); its RAM is inside the tolerance (0.5% + 4.00 MiB) of +trm_b's own 902.00 MiB "
        "(over budget), so trm_a's part in the pass may be run-to-run noise")
    peaks[frozenset({B.name})] = 950  # trm_a took 51 MiB off trm_b's run: no doubt
    assert remediation_text(search(toy(A, B), measure), case).endswith("found in 3 real runs (bound 8)")


def test_no_passing_set_names_the_lowest_measured_one():
    """What comes nearest is the first thing to ask when nothing passes (a bigger card, or a fix of one's own on
    top). Before, "none of the 7 valid sets of trm_a, trm_b, trm_c passed (all measured)" and no set named."""
    from gpu_budget.report.terminal import remediation_text

    none = search(toy(A, B, C), Stand(limit=100))
    assert remediation_text(none).endswith("passed (all measured); the lowest: +trm_b +trm_c (RAM 500 B)")
    bound = search(toy(A, B, C), Stand(limit=100), max_runs=3)
    assert remediation_text(bound).endswith("(raise --gpu-budget-remediate-max-runs); the lowest: +trm_c (RAM 600 B)")
    dead = search(toy(A), lambda c: Trial((), "over-budget", Peaks(ram=5), "measured child failed (oom): x"))
    assert "lowest" not in remediation_text(dead)  # a death read only what it reached: no figure to rank
