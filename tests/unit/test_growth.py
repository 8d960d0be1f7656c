"""The growth rule (judge/growth.py): a leak's slope after warm-up, projected to the declared run length."""

import pytest

from gpu_budget.declare.scenario import Budget, Tolerance
from gpu_budget.judge import growth
from gpu_budget.judge.compare import judge
from gpu_budget.measure.figures import Peaks, Step
from gpu_budget.results import Measurement

MiB, GiB = 2**20, 2**30
ALLOW = {"ram": 0.12 * MiB, "ram_tree": 0.12 * MiB, "vram_allocated": 20_480}
# S1's Trainer script, 8 steps, as measured (MiB): step 2 holds the optimizer state, step 3 the allocator's settling,
# step 8 (the last) loads no next batch
CLEAN = [749.65, 760.27, 761.23, 763.18, 762.27, 762.24, 763.38, 711.77]
LEAK = [750.79, 762.87, 765.35, 767.89, 769.39, 770.9, 773.39, 724.3]  # the same with 1.5 MiB kept per step


def records(mib: list[float], metric: str = "ram_tree", **other: list[float]) -> list[Step]:
    return [Step(step=k, **{"ram": int(v * MiB), metric: int(v * MiB),
                            **{name: int(values[k - 1] * MiB) for name, values in other.items()}})
            for k, v in enumerate(mib, 1)]


FOUR_GIB = Budget(ram=4 * GiB)


def checked(mib: list[float], budget: Budget = FOUR_GIB, steps: int | None = 10_000, **other):
    recs = records(mib, **other)
    return growth.check(recs, {"ram_tree": max(r.ram_tree for r in recs)}, budget, steps, ALLOW)


def test_a_clean_series_is_steady_whatever_its_last_step_does():
    check = checked(CLEAN)
    (projection,) = check.projections
    assert not projection.growth.grows and not check.breaches and check.problem is None
    assert (projection.growth.first, projection.growth.last) == (3, 7)
    assert projection.projected == max(int(v * MiB) for v in CLEAN)  # no growth: the measured peak
    assert check.notes == ["host RAM steady over steps 3-7 (0.10 MiB/step, within the clean allowance 0.12 MiB/step)"]


def test_a_linear_leak_is_projected_and_breaks_the_budget():
    check = checked(LEAK)
    g = check.projections[0].growth
    assert g.grows and g.slope == pytest.approx(2.0 * MiB)  # the smaller half: steps 5-7 (step 8, the last, left out)
    assert check.breaches == [("host RAM grows 2.00 MiB/step over steps 3-7 (1.88 .. 2.12 MiB/step with the clean "
                               "allowance): about 20.27 GiB at step 10,000 > budget 4.00 GiB")]
    row = check.to_json()["projections"][0]
    assert row["steps_fitted"] == [3, 7] and row["breaks"] and row["at_step"] == 10_000 and row["budget"] == 4 * GiB


def test_a_pure_line_reads_its_own_slope():
    line = [100 + 1.75 * k for k in range(8)]
    assert checked(line).projections[0].growth.slope == pytest.approx(1.75 * MiB, rel=1e-6)


@pytest.mark.parametrize("jump_after", range(3, 8))  # 7: the jump comes at step 8, which is left out
def test_a_step_shaped_growth_is_not_a_slope(jump_after):
    """A cache made once: flat, one jump of 40 MiB after step `jump_after`, flat again. It lies in one half only."""
    series = [700, 710, *[710 + (40 if k > jump_after else 0) for k in range(3, 9)]]
    check = checked(series)
    assert not check.projections[0].growth.grows and not check.breaches, check.notes


def test_growth_that_persists_only_in_the_late_steps_is_not_a_slope():
    series = [700, 710, 710, 710, 710, 720, 730, 730]  # two rises, both in the second half (steps 5-7)
    assert not checked(series).projections[0].growth.grows


def test_within_the_allowance_is_not_growth_and_past_it_the_interval_decides():
    rising = [700, 710, *[710 + 0.1 * k for k in range(6)]]  # 0.1 MiB/step: within 0.12
    assert not checked(rising).projections[0].growth.grows
    slow = [700, 710, *[710 + 0.3 * k for k in range(6)]]  # growth, but low end 0.18 MiB/step: 1.8 GiB at 10,000
    check = checked(slow)
    assert check.projections[0].growth.grows and not check.breaches
    assert "within budget 4.00 GiB" in check.notes[0]
    assert checked(slow, steps=100_000).breaches  # the same slope over a longer run breaks it


def test_too_few_steps_is_a_problem_naming_what_is_needed():
    check = checked([700, 710, 711, 712, 713, 714, 715])
    assert check.projections == () and check.problem.startswith("steps=10,000 declared, but the run measured 7 ")
    assert "needs at least 8 (the first 2 are warm-up, then 5 fitted, and the last is left out)" in check.problem


def test_no_steps_declared_checks_nothing():
    check = checked(LEAK, steps=None)
    assert (check.projections, check.breaches, check.notes, check.problem) == ((), [], [], None)


def test_gpu_allocated_is_projected_against_the_vram_budget():
    allocated = [100, 108, *[108 + 2 * k for k in range(6)]]  # 2 MiB/step on the GPU, host RAM clean
    check = checked(CLEAN, Budget(ram=4 * GiB, vram=8 * GiB), vram_allocated=allocated)
    ram, gpu = check.projections
    assert ram.growth.metric == "ram_tree" and not ram.breaks
    assert gpu.growth.metric == "vram_allocated" and gpu.breaks
    assert check.breaches[0].startswith("GPU allocated grows 2.00 MiB/step over steps 3-7") and "> budget 8.00 GiB" in \
        check.breaches[0]


def test_without_a_budget_the_projection_is_a_note():
    check = checked(LEAK, Budget())
    assert not check.breaches and check.notes[0].endswith("(no budget to compare)")


def test_the_main_process_series_stands_in_where_no_tree_was_read():
    recs = [Step(step=k, ram=int(v * MiB)) for k, v in enumerate(LEAK, 1)]
    check = growth.check(recs, {"ram": max(r.ram for r in recs)}, Budget(ram=4 * GiB), 10_000, ALLOW)
    assert check.projections[0].growth.metric == "ram" and check.breaches[0].startswith("host RAM (main process) grows")


def _measured(mib: list[float]) -> Measurement:
    recs = records(mib)
    peak = max(r.ram_tree for r in recs)
    return Measurement(status="ok", peaks=Peaks(ram=peak, ram_tree=peak), steps=tuple(recs))


def test_judge_fails_a_projection_past_the_budget_while_the_peak_is_within_it():
    """Under the committed allowances: 1.5 MiB kept per step fails at 10,000 steps; a flat run does not."""
    tol, leak = Tolerance(rel=0.005, abs=4 * MiB), [700, 710, *[710 + 1.5 * k for k in range(6)]]
    j = judge(_measured(leak), Budget(ram=4 * GiB), None, tol, ci=False, update=False, steps=10_000)
    assert (j.verdict, j.passed) == ("over-budget", False)
    assert "host RAM grows 1.50 MiB/step over steps 3-7" in j.message and "at step 10,000 > budget 4.00 GiB" in j.message
    same = judge(_measured(leak), Budget(ram=4 * GiB), None, tol, ci=False, update=False)  # no steps=: the peak only
    assert same.passed and "grows" not in same.message
    flat = judge(_measured([700, 710, *[710] * 6]), Budget(ram=4 * GiB), None, tol, ci=False, update=False, steps=10_000)
    assert flat.passed and flat.message.startswith("host RAM steady over steps 3-7")


def test_judge_errors_where_a_declared_length_cannot_be_projected():
    j = judge(_measured([700, 710, 711]), Budget(ram=4 * GiB), None, Tolerance(rel=0.005, abs=4 * MiB), ci=False,
              update=False, steps=10_000)
    assert (j.verdict, j.passed) == ("error", False) and "measured 3 optimizer step(s)" in j.message
