"""The growth rule over long runs (measure/rises.py `scales`, judge/growth.py `fit`): a run of many steps is read in
blocks of steps too, a block of L steps allowed what one step is; the shapes of benchmarks/growth_long.py (section 5g)
as exact series."""

import pytest

from gpu_budget.judge import growth
from gpu_budget.measure import rises
from gpu_budget.model.budget import Budget
from gpu_budget.model.entry import Spread
from gpu_budget.model.figures import Peaks, Step

MiB, GiB = 2**20, 2**30
ONE_GIB = Budget(ram=GiB)


def series(n: int, kept, held=lambda k: 0.0, base: float = 600.0) -> list[float]:
    """n steps' host RAM (MiB): `kept(k)` MiB kept for good at step k, `held(k)` held for that step alone."""
    out, total = [], 0.0
    for k in range(1, n + 1):
        total += kept(k)
        out.append(base + total + held(k))
    return out


def check(mib: list[float], steps: int = 10_000, budget: Budget = ONE_GIB, recorded: Spread | None = None,
          metric: str = "ram_tree", **kwargs) -> growth.Check:
    recs = [Step(step=k, ram=int(v * MiB), **{metric: int(v * MiB)}) for k, v in enumerate(mib, 1)]
    peaks = Peaks(**{metric: max(getattr(r, metric) for r in recs)})
    return growth.check(recs, peaks, budget, steps, recorded=recorded, **kwargs)


def test_a_slow_leak_over_200_steps_is_read_in_blocks_and_breaks_the_budget():
    """0.25 MiB/step is a quarter of the steps' own allowance (984 KiB/step): the steps alone read it as steady
    however long the run; over 200 steps it is 50 MiB, read in blocks of 16 steps against 984 KiB / 16 per step."""
    mib = series(200, lambda k: 0.25)
    steps_only = check(mib, scaled=())
    assert not steps_only.projections[0].growth.grows and not steps_only.breaches
    found = check(mib)
    g = found.projections[0].growth
    assert g.grows and g.window.scale == 16 and g.slope == pytest.approx(0.25 * MiB, abs=1)
    assert g.allowance == growth.RAM_ALLOWANCE / 16 and (g.first, g.last) == (119, 199)
    (breach,) = found.breaches
    assert breach.startswith("host RAM grows 0.25 MiB/step over steps 119-199, in blocks of 16 judged steps (0.19 .. "
                             "0.31 MiB/step with the clean allowance): about 3.03 GiB at step 10,000 > budget 1.00 GiB; "
                             "it rose in 5 of its last 5 blocks of 16 judged steps and had not stopped by step 199")
    assert found.record().projections[0].rule == "median rise of the running peak over the last 5 blocks of 16 judged steps"


@pytest.mark.parametrize("name, mib", [
    ("flat", series(200, lambda k: 0.0)),
    ("a cache filled over the first half", series(200, lambda k: 0.5 if k <= 100 else 0.0)),
    ("lumps of 2 MiB at steps 30, 90, 150 and 190", series(200, lambda k: 2.0 if k in (30, 90, 150, 190) else 0.0)),
    ("an evaluation every 20 steps", series(200, lambda k: 0.0, lambda k: 60.0 if k % 20 == 0 else 0.0)),
    ("a sawtooth", series(200, lambda k: 0.0, lambda k: 40.0 if k % 2 == 0 else 0.0)),
    ("a 1 MiB rise every 16 steps, at its block's allowance", series(200, lambda k: 0.9 if k % 16 == 0 else 0.0)),
])
def test_what_must_pass_over_200_steps_reads_steady(name, mib):
    found = check(mib)
    assert not found.projections[0].growth.grows and not found.breaches, found.notes
    assert found.projections[0].growth.window.scale == 1  # steady: said of the steps, the row's own growth


@pytest.mark.parametrize("name, mib, rate, scale", [
    ("0.1 MiB/step from step 1", series(200, lambda k: 0.1), 0.1, 16),
    ("0.5 MiB/step in the last quarter", series(200, lambda k: 0.5 if k > 150 else 0.0), 0.5, 16),
    ("0.25 MiB/step under an evaluation every 20 steps",
     series(200, lambda k: 0.25, lambda k: 60.0 if k % 20 == 0 else 0.0), 0.25, 16),
    ("0.25 MiB/step under a sawtooth", series(200, lambda k: 0.25, lambda k: 40.0 if k % 2 == 0 else 0.0), 0.25, 16),
])
def test_a_slow_leak_over_200_steps_is_read_at_its_own_rate(name, mib, rate, scale):
    g = check(mib).projections[0].growth
    assert g.grows and g.window.scale == scale and g.slope == pytest.approx(rate * MiB, rel=0.02), name


def test_the_blocks_read_lie_in_the_run_s_last_half():
    mib = series(200, lambda k: 0.25)
    steps = range(1, 201)
    found = rises.scales(steps, [int(v * MiB) for v in mib])
    assert [r.scale for r in found] == [1, 2, 4, 8, 16]  # 197 judged steps: 5 blocks of 16 are 80, of 32 are 160
    assert all(r.last - r.first <= 197 // 2 for r in found) and all(r.last == 199 for r in found)
    assert rises.largest_block(200) == 16 and rises.largest_block(22) == 1 and rises.largest_block(23) == 2
    assert rises.scales(steps[:8], [1] * 8) == () and rises.of(steps, [int(v * MiB) for v in mib]) == found[0]


@pytest.mark.parametrize("run", [20, 24, 44, 60, 100, 200, 400])
def test_a_cache_that_stops_where_the_row_says_reads_steady(run):
    """The row's words for a failing growth: "a run of R steps tells a cache that fills within S steps from a leak".
    Every cache that stops filling by S reads as steady in a run of R, at every block size; one that fills for the
    last flat block's steps more does not."""
    text = check(series(run // 2, lambda k: 5.0)).breaches[0]
    longer, within = (int(text.split(word)[1].split(" steps")[0]) for word in ("so a run of ", "fills within "))
    assert longer == run
    for stop in range(1, within + 1):
        assert not check(series(run, lambda k, s=stop: 5.0 if k <= s else 0.0)).projections[0].growth.grows, stop
    assert check(series(run, lambda k: 5.0 if k <= within + 3 else 0.0)).projections[0].growth.grows


@pytest.mark.parametrize("stop", [*range(1, 40), 60, 61, 99, 100, 150, 151, 200, 255, 256, 300])
def test_a_cache_stopping_within_the_first_two_thirds_and_4_steps_before_the_end_reads_steady(stop):
    """docs/declaring.md: a cache that stops filling by step S reads as steady in a run of S + 4 steps or 1.5 S,
    whichever is longer, and in every longer run."""
    first = max(stop + 4, -(-3 * stop // 2), rises.MIN_STEPS)
    for run in range(first, first + 40, 3):
        assert not check(series(run, lambda k: 5.0 if k <= stop else 0.0)).projections[0].growth.grows, (stop, run)


def test_gpu_allocated_is_read_by_its_steps_alone():
    """No long clean GPU runs are measured: its allowance is not spread over blocks."""
    mib = series(200, lambda k: 0.01)  # 10 KiB/step, under its 20 KiB/step
    found = check(mib, metric="vram_allocated", budget=Budget(vram=GiB))
    g = next(p.growth for p in found.projections if p.growth.metric == "vram_allocated")
    assert not g.grows and g.window.scale == 1


def recorded_over(*runs: list[float], metric: str = "ram_tree") -> Spread:
    """The spread an entry recorded over these runs keeps (session/recording.py)."""
    steps = [[Step(step=k, ram=int(v * MiB), **{metric: int(v * MiB)}) for k, v in enumerate(mib, 1)] for mib in runs]
    return Spread.of([Peaks(**{metric: int(max(mib) * MiB)}) for mib in runs], growth.largest(steps),
                     growth.largest_blocks(steps))


def lumps_at_the_end(n: int = 200) -> list[float]:
    """A noisy clean run: flat, its RSS rising 0.25 MiB a step over its last ten steps (an allocator's late lump)."""
    return series(n, lambda k: 0.25 if k > n - 10 else 0.0)


def test_recorded_runs_widen_each_block_size_by_its_own_growth():
    """Runs whose last steps rose 0.25 MiB/step widen the steps' allowance to 1.5 MiB/step, but over blocks of 16
    steps they were flat: a 0.9 MiB/step leak over 200 steps read steady at every block size (each widened by the
    steps' figure) and passed a 1 GiB budget at step 10,000; each block size is now widened by its own."""
    recorded = recorded_over(lumps_at_the_end(), lumps_at_the_end())
    assert recorded.growth["ram_tree"] == int(0.25 * MiB) and recorded.blocks["ram_tree"][16] == 0
    found = check(series(200, lambda k: 0.9), recorded=recorded)
    g = found.projections[0].growth
    assert g.grows and g.window.scale == 16 and g.allowance == growth.RAM_ALLOWANCE / 16 and g.recorded_runs is None
    assert found.breaches
    again = check(lumps_at_the_end(), recorded=recorded).projections[0].growth  # its own runs read steady
    assert not again.grows and again.recorded_runs == 2 and again.allowance == 6 * int(0.25 * MiB)


def test_a_block_size_the_recorded_runs_did_not_read_is_not_widened():
    """An entry recorded before block figures were kept (or over runs too short for a size) widens only what its
    runs read: a block size it holds nothing for keeps the clean allowance."""
    recorded = Spread(runs=3, growth={"ram_tree": int(0.05 * MiB)})
    g = check(series(200, lambda k: 0.1), recorded=recorded).projections[0].growth
    assert g.grows and g.window.scale == 16 and g.allowance == growth.RAM_ALLOWANCE / 16 and g.recorded_runs is None
    every = {"ram_tree": {size: int(0.05 * MiB) for size in (2, 4, 8, 16)}}  # the sizes its runs read: each widened
    wide = Spread(runs=3, growth={"ram_tree": int(0.05 * MiB)}, blocks=every)
    assert not check(series(200, lambda k: 0.1), recorded=wide).projections[0].growth.grows
    g = check(series(200, lambda k: 0.4), recorded=wide).projections[0].growth
    assert g.grows and g.allowance == 6 * int(0.05 * MiB) and g.recorded_runs == 3


def test_memory_freed_then_flat_reads_steady_at_the_run_s_end():
    """A leak that stopped when its memory was freed (300 MiB at step 100) and stayed flat for the last 100 steps is
    not growth still going on: it read "grows 2.00 MiB/step over steps 23-199 ... it rose in 5 of its last 5 blocks",
    steps from before the free, as if the flat steps after it showed nothing."""
    found = check(series(200, lambda k: -300.0 if k == 100 else (2.0 if k < 100 else 0.0), base=700))
    g = found.projections[0].growth
    assert not g.grows and not found.breaches, found.breaches
    assert g.first >= 100 and g.last == 199


def test_a_leak_after_memory_freed_is_read_at_its_own_rate():
    """400 MiB freed at step 100, then 2 MiB/step kept: the running peak is not reached again within the run, so every
    step after the free was passed over as a dip and the row read "steady over steps 94-199" of the flat steps
    before it; 2 MiB/step is 20 GiB by step 10,000."""
    found = check(series(200, lambda k: -400.0 if k == 100 else (2.0 if k > 100 else 0.0), base=1000))
    g = found.projections[0].growth
    assert g.grows and g.slope == pytest.approx(2 * MiB, rel=0.01) and g.first >= 100, found.notes
    assert found.breaches


def test_an_evaluation_that_grows_each_time_is_still_read_after_its_last_one():
    """Only the evaluations grow (1 MiB more each, every 20 steps), the steps between them flat: the steps after the
    last evaluation are no longer than those between earlier ones, so they stay passed over as dips."""
    evals = series(200, lambda k: 0.0, lambda k: 60.0 + k / 20 if k % 20 == 0 else 0.0)
    assert check(evals, scaled=()).projections[0].growth.slope == pytest.approx(MiB / 20, rel=0.02)


def test_a_loop_marking_every_10th_step_is_allowed_per_step_what_its_blocks_are():
    """A mark every 10 steps spans 10 steps, so its rise is allowed what one step's is over 10 steps, as a block of 10
    steps is. 30 marks 10 steps apart keeping 0.4 MiB/step (120 MiB over the run) read "steady over steps 231-281
    (0.40 MiB/step, within the clean allowance 0.96 MiB/step)", where the same run marked at every step fails."""
    marks = [1 + 10 * i for i in range(30)]
    recs = [Step(step=s, ram=int((600 + 4 * i) * MiB), ram_tree=int((600 + 4 * i) * MiB)) for i, s in enumerate(marks)]
    found = growth.check(recs, Peaks(ram_tree=recs[-1].ram_tree), ONE_GIB, 10_000)
    g = found.projections[0].growth
    assert g.grows and g.slope == pytest.approx(0.4 * MiB, rel=0.01) and found.breaches, found.notes
    assert g.allowance == pytest.approx(growth.RAM_ALLOWANCE / (10 * g.window.scale))
    assert check(series(300, lambda k: 0.4)).breaches


def test_blocks_of_marks_10_steps_apart_are_allowed_what_their_steps_are():
    """The row says "in blocks of 160 judged steps": its allowance is that of 160 steps, not of 16."""
    marks = [1 + 10 * i for i in range(200)]
    recs = [Step(step=s, ram=int((600 + i) * MiB), ram_tree=int((600 + i) * MiB)) for i, s in enumerate(marks)]
    g = growth.check(recs, Peaks(ram_tree=recs[-1].ram_tree), ONE_GIB, 10_000).projections[0].growth
    assert g.block == 160 and g.allowance == pytest.approx(growth.RAM_ALLOWANCE / 160)


@pytest.mark.parametrize(("period", "shows_from"), [(2, 23), (10, 45), (20, 85)])
def test_a_leak_every_k_th_step_shows_once_its_judged_steps_hold_four_periods(period, shows_from):
    """A cache flushed every k-th step that keeps 0.5 MiB a step of each flush: its last half holds too few of its
    jumps for the steps, and for blocks of half its period or less, but its judged steps repeat every k, each
    period keeping its flush, from four periods on (measure/cycle.py's floor; blocks of 2 for the slower steps'
    allowance): every 10th step showed from 83 steps, every 20th from 163. docs/declaring.md names the run length."""
    def verdict(n: int) -> bool:
        mib = [500 + (k // period) * period * 0.5 for k in range(1, n + 1)]
        return growth.fit(growth.Series("ram_tree", tuple(range(1, n + 1)), tuple(int(v * MiB) for v in mib)),
                          growth.RAM_ALLOWANCE, scaled=True).grows

    assert not verdict(shows_from - 1) and all(verdict(n) for n in range(shows_from, shows_from + 3 * period))


def test_tops_reached_early_in_a_long_noisy_run_are_not_growth_still_going_on():
    """Steps each peaking anywhere in 0-20 MiB over a floor, no trend, 100 of them: the blocks that reached the running
    peak were the run's first few, every later one fell below them. Read as the window, their rises said "host RAM
    grows 1.80 MiB/step over steps 4-99, in blocks of 2 judged steps ... about 18.36 GiB at step 10,000 > budget
    1.25 GiB"; the tops judged now lie in the run's last half."""
    import random

    draw = random.Random(58)
    noisy = [1000 + draw.uniform(0, 20) for _ in range(100)]
    found = check(noisy, budget=Budget(ram=int(1.25 * GiB)))
    assert not found.breaches and not found.projections[0].growth.grows, found.breaches


def test_marks_one_step_apart_after_a_gap_in_their_numbers_are_allowed_one_step_each():
    """A run resumed at a later step (its numbers 1-15, then 1001-1015): the marks the rule reads are one step apart,
    so each is allowed one step's growth. Held to the run's mean spacing (1014 steps over 29 marks, 35), a clean run
    whose RSS grows in lumps of 0.15 MiB (S1's script grows so) was allowed 0.03 MiB/step and failed, read "grows
    0.15 MiB/step ... > budget"; numbered 1-30 it reads steady."""
    lumps = [600 + 0.15 * (k // 2 + k // 3) for k in range(30)]  # rises 0.15 MiB on two steps of three
    numbers = list(range(1, 16)) + list(range(1001, 1016))
    found = growth.check(steps(numbers, lumps), Peaks(ram_tree=int(lumps[-1] * MiB)), ONE_GIB, 10_000)
    g = found.projections[0].growth
    assert not found.breaches and not g.grows, found.breaches
    assert g.allowance == growth.RAM_ALLOWANCE and g.block == 1
    leak = [600 + 1.5 * k for k in range(30)]  # a leak read after the gap is still read at its rate per step
    found = growth.check(steps(numbers, leak), Peaks(ram_tree=int(leak[-1] * MiB)), ONE_GIB, 10_000)
    assert found.breaches and found.projections[0].growth.slope == 1.5 * MiB, found.notes


def steps(numbers: list[int], mib: list[float]) -> list[Step]:
    return [Step(step=s, ram=int(v * MiB), ram_tree=int(v * MiB)) for s, v in zip(numbers, mib)]


# A plain torch loop (a Linear, SGD) over epochs of 100 batches that marks every 10th by its place in the epoch
# (step(i) where i % 10 == 0: step(0), step(10), ..., step(90), step(0), ...), run 400 steps as a command case keeping
# 0.15 MiB each step: its ram_tree per mark, in bytes.
RESTARTED_EVERY_10TH = [
    314322944, 316026880, 317517824, 319115264, 320712704, 322310144, 323911680, 325509120, 327106560, 328704000,
    330301440, 332005376, 333541376, 335138816, 336736256, 338333696, 339931136, 341528576, 343126016, 344723456,
    346320896, 347918336, 349515776, 351113216, 352714752, 354312192, 355909632, 357507072, 359104512, 360701952,
    362254336, 363896832, 365498368, 367157248, 368693248, 370290688, 371888128, 373485568, 375083008, 376680448]


def test_marks_every_10th_step_numbered_anew_each_epoch_are_read_10_steps_apart():
    """Numbers that go back are read in the order run, but each mark spans the steps its numbers rise by: 10 here.
    Read one step a mark, 0.15 MiB/step (1.76 GiB by step 10,000 against 4 GiB) read "grows 1.52 MiB/step ... about
    15.17 GiB at step 10,000 > budget 4.00 GiB"."""
    numbers = [10 * (k % 10) for k in range(40)]
    found = growth.check(steps(numbers, [b / MiB for b in RESTARTED_EVERY_10TH]),
                         Peaks(ram_tree=RESTARTED_EVERY_10TH[-1]), Budget(ram=4 * GiB), 10_000)
    (p,) = found.projections
    assert not found.breaches and p.growth.slope == pytest.approx(0.152 * MiB, rel=0.02), found.notes
    assert "so each mark is 10 steps, as its numbers rise" in found.notes[0], found.notes
    assert p.record().steps_fitted[1] == 39  # its 39th mark: the last judged, by place as the plots draw it
    leak = growth.check(steps(numbers, [600 + 15 * k for k in range(40)]), Peaks(ram_tree=GiB), ONE_GIB, 10_000)
    assert leak.breaches and leak.projections[0].growth.slope == 1.5 * MiB, leak.notes
