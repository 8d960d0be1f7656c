"""The search judges the case and each candidate as the gate does: recorded growth, each rank, unmeasured budgets."""

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


def two_ranks(second_steps: int, leak_mib: int) -> Measurement:
    """Rank 0 flat at 900 MiB over 10 steps (the row's steps), rank 1 at 300 MiB keeping `leak_mib` MiB a step."""
    from gpu_budget.model.figures import RankFigures

    flat = tuple(Step(step=k, ram=900 * MiB, ram_tree=900 * MiB) for k in range(1, 11))
    grows = tuple(Step(step=k, ram=(300 + leak_mib * k) * MiB, ram_tree=(300 + leak_mib * k) * MiB)
                  for k in range(1, second_steps + 1))
    top = (300 + leak_mib * second_steps) * MiB
    ranks = (RankFigures(0, Peaks(ram=900 * MiB, ram_tree=900 * MiB), steps=flat),
             RankFigures(1, Peaks(ram=top, ram_tree=top), steps=grows))
    return Measurement("ok", ranks[0].peaks, steps=flat, ranks=ranks)


def test_each_rank_is_judged_as_the_gate_judges_it():
    """A budget applies to each rank. Before, a launch whose rank 1 keeps 3 MiB a step ("rank 1: host RAM grows 3.00
    MiB/step ... about 29.59 GiB at step 10,000 > budget 2.00 GiB" in the gate) read "pass" as a candidate and needed
    no remedy, and one whose rank 1 measured 4 steps (the gate's error: "rank 1 measured 4 of the run's 10 optimizer
    step(s)") read "pass" too."""
    budget, tol = Budget(ram=2 * GiB), Tolerance(rel=0.005, abs=4 * MiB)
    leaking, short = two_ranks(10, 3), two_ranks(4, 3)
    assert judge(leaking, budget, None, tol, steps=10_000, ci=False, update=False).verdict == "over-budget"
    assert remediate.needs_remedy(leaking, budget, 10_000)
    outcome = remediate.trial_outcome(leaking, budget, 10_000)
    assert outcome.verdict == "over-budget" and outcome.message.startswith("rank 1: host RAM grows 3.00 MiB/step")
    assert judge(short, budget, None, tol, steps=10_000, ci=False, update=False).verdict == "error"
    outcome = remediate.trial_outcome(short, budget, 10_000)
    assert outcome.verdict == "error" and "rank 1 measured 4 of the run's 10 optimizer step(s)" in outcome.message
    assert remediate.trial_outcome(two_ranks(10, 0), budget, 10_000).verdict == "pass"


def test_a_candidate_that_measured_no_figure_for_a_budget_does_not_pass_it():
    """The gate errors where a VRAM budget has no GPU figure behind it, or imbalance= no two ranks (can_run.py): the
    budget would test nothing. Before, a set whose run never touched CUDA (a fix that left the model on the CPU) read
    "pass" against a 1 GiB VRAM budget, and one that ran a single rank "pass" against imbalance=1.2."""
    from gpu_budget.declare.marks import gpu_budget as mark

    cpu_run = Measurement("ok", Peaks(ram=500 * MiB), wall_seconds=1.0)
    outcome = remediate.trial_outcome(cpu_run, mark(vram="1 GiB", device="cuda").budget)
    assert outcome.verdict == "error" and outcome.message.startswith("VRAM budget 1.00 GiB, but no GPU figure was measured")
    outcome = remediate.trial_outcome(cpu_run, mark(ram="1 GiB", imbalance=1.2).budget)
    assert outcome.verdict == "error" and outcome.message.startswith("imbalance=1.2 bounds a launcher's largest rank")
    assert remediate.trial_outcome(cpu_run, mark(ram="1 GiB").budget).verdict == "pass"


def test_a_set_over_budget_by_its_peak_is_over_budget_though_its_growth_cannot_be_projected():
    """A set that ran 3 steps under steps=10,000 (its growth cannot be projected) but peaked at 1.07 GiB against 1000
    MiB cannot pass, whatever its growth. Before it read "error", and the answer found after it hedged: "1 set tried
    before it failed with an error (not measured), so it may not be the cheapest"."""
    budget = Budget(ram=1000 * MiB)

    def run(mib, steps):
        return Measurement("ok", Peaks(ram=mib * MiB, ram_tree=mib * MiB),
                           steps=tuple(Step(step=k, ram=mib * MiB, ram_tree=mib * MiB) for k in range(1, steps + 1)))

    over = remediate.trial_outcome(run(1100, 3), budget, 10_000)
    assert over.verdict == "over-budget" and over.message.startswith("host RAM peak 1.07 GiB (process tree; main process 1.07 GiB) > budget 1000.00 MiB")
    assert "steps=10,000 declared, but the run measured 3 optimizer step(s)" in over.message
    assert remediate.trial_outcome(run(900, 3), budget, 10_000).verdict == "error"  # within: its growth untold


def test_each_rank_is_held_to_the_growth_its_own_recorded_runs_read(tmp_path):
    """Rank 1's steps rise 3 MiB a step in every recorded run (its own noise), rank 0's (the row's: the worst) stay
    flat. The spread was read off the row's steps alone, so rank 1 was held to the clean allowance and its recorded
    noise failed the case: "rank 1: host RAM grows 3.00 MiB/step ... > budget 2.00 GiB". Each rank is held to what its
    own runs read, and that crosses the baseline file."""
    from gpu_budget import Scenario
    from gpu_budget.judge import baselines, files
    from gpu_budget.session.recording import record_runs

    noisy = two_ranks(10, 3)
    _, spread, problem = record_runs(Scenario(name="s", command=["true"]), lambda scenario, snapshot: noisy, noisy, 3)
    assert problem is None and spread.of_rank(1).growth["ram_tree"] == 3 * MiB and spread.of_rank(0).growth["ram_tree"] == 0
    path = tmp_path / "t.json"
    files.write(path, "tiny", {"test_x": Entry(noisy.peaks, spread=spread, fingerprint={"malloc": "steady"}).to_json()})
    stored = baselines.lookup(files.load(path), "tiny", "test_x")
    assert stored.spread == spread
    verdict = judge(noisy, Budget(ram=2 * GiB), stored, Tolerance(rel=0.005, abs=4 * MiB), steps=10_000, ci=False,
                    update=False)
    assert verdict.passed, verdict.message
    older = Entry(noisy.peaks, spread=Spread(3, {}, {"ram_tree": 0}))  # recorded before each rank kept its own: the row's
    assert judge(noisy, Budget(ram=2 * GiB), older, Tolerance(rel=0.005, abs=4 * MiB), steps=10_000, ci=False,
                 update=False).verdict == "over-budget"


def test_each_rank_s_peak_is_held_to_its_own_recorded_spread():
    """The recorded runs spread rank 1's peak 30 MiB and the row's (rank 0's) not at all. Each rank's peak was widened
    by the row's spread: rank 1, 20 MiB over its baseline within its own runs' spread, regressed, and in the other
    entry a rank 1 whose runs never moved was allowed the 30 MiB the row's did."""
    from gpu_budget.model.figures import RankFigures

    def launch(second: int) -> Measurement:
        ranks = (RankFigures(0, Peaks(ram=900 * MiB, ram_tree=900 * MiB)),
                 RankFigures(1, Peaks(ram=second * MiB, ram_tree=second * MiB)))
        return Measurement("ok", ranks[0].peaks, ranks=ranks)

    stored = {0: Peaks(ram=900 * MiB, ram_tree=900 * MiB), 1: Peaks(ram=500 * MiB, ram_tree=500 * MiB)}
    quiet, noisy = Spread(3, {"ram": 0, "ram_tree": 0}), Spread(3, {"ram": 30 * MiB, "ram_tree": 30 * MiB})
    tol, budget = Tolerance(rel=0.005, abs=4 * MiB), Budget(ram=2 * GiB)
    own_noise = Entry(stored[0], ranks=stored, spread=Spread(3, quiet.by_metric, ranks={0: quiet, 1: noisy}))
    verdict = judge(launch(520), budget, own_noise, tol, ci=False, update=False)
    assert verdict.passed, verdict.message
    row_noise = Entry(stored[0], ranks=stored, spread=Spread(3, noisy.by_metric, ranks={0: noisy, 1: quiet}))
    verdict = judge(launch(520), budget, row_noise, tol, ci=False, update=False)
    assert verdict.verdict == "regression" and "rank 1: " in verdict.message, verdict.message


def test_a_rank_whose_own_recorded_runs_widen_its_allowance_past_the_budget_is_warned_of_by_name():
    """Rank 1's recorded runs rise 3 MiB a step, so its own allowance is six times that: a leak within it breaks the
    budget by step 10,000, which the gate says of a case without ranks ("warning: host RAM's recorded runs widen its
    growth allowance ..."). The warning was read off the row's steps and spread (rank 0's, flat): the case passed
    with no word of it. Each rank whose own widened allowance could hide a leak is now warned of, named."""
    from gpu_budget import Scenario
    from gpu_budget.model.entry import SPREAD_MULTIPLE
    from gpu_budget.session.recording import record_runs
    from gpu_budget.units import format_per_step

    noisy = two_ranks(10, 3)
    _, spread, _ = record_runs(Scenario(name="s", command=["true"]), lambda scenario, snapshot: noisy, noisy, 3)
    tol = Tolerance(rel=0.005, abs=4 * MiB)

    def warnings(budget):
        verdict = judge(noisy, budget, Entry(noisy.peaks, spread=spread), tol, steps=10_000, ci=False, update=False)
        assert verdict.passed, verdict.message
        return [n for n in verdict.message.split("; ") if "warning:" in n]

    widened = format_per_step(SPREAD_MULTIPLE * spread.of_rank(1).growth["ram_tree"])  # six times rank 1's 3 MiB
    (warned,) = warnings(Budget(ram=2 * GiB))
    assert warned.startswith(f"rank 1: warning: host RAM's recorded runs widen its growth allowance to {widened}")
    assert warned.endswith("> budget 2.00 GiB: run more steps, whose late steps grow less, and record again")
    assert warnings(Budget(ram=512 * GiB)) == []  # 18 MiB/step over 10,000 steps fits: nothing hidden


def test_a_rank_s_stored_spread_too_wide_to_catch_a_regression_is_warned_of_by_name():
    """Rank 1's recorded runs spread its peak 30 MiB, six times which is 36 % of its 500 MiB baseline: a +5 % change
    reads as noise there. The warning came from rank 1's comparison with no rank in it ("warning: ram_tree's stored
    spread 30.00 MiB over 3 runs is too wide ..."), as if of the row; it now names its rank."""
    from gpu_budget.model.figures import RankFigures

    ranks = (RankFigures(0, Peaks(ram=900 * MiB, ram_tree=900 * MiB)), RankFigures(1, Peaks(ram=500 * MiB, ram_tree=500 * MiB)))
    launch = Measurement("ok", ranks[0].peaks, ranks=ranks)
    quiet, noisy = Spread(3, {"ram": 0, "ram_tree": 0}), Spread(3, {"ram": 30 * MiB, "ram_tree": 30 * MiB})
    entry = Entry(ranks[0].peaks, ranks={r.rank: r.peaks for r in ranks}, spread=Spread(3, quiet.by_metric,
                                                                                        ranks={0: quiet, 1: noisy}))
    verdict = judge(launch, Budget(ram=2 * GiB), entry, Tolerance(rel=0.005, abs=4 * MiB), ci=False, update=False)
    assert verdict.passed, verdict.message
    warnings = [n for n in verdict.message.split("; ") if "warning:" in n]
    assert warnings == [n for n in warnings if n.startswith("rank 1: warning: ram_tree's stored spread 30.00 MiB")]
    assert warnings, verdict.message
