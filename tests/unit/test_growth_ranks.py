"""A launch's growth judged rank by rank (judge/growth.py rank_checks): every rank's reading, warnings and breaches
are its own and named, whichever rank the row's steps (the worst by peak) are."""

from gpu_budget.judge import growth
from gpu_budget.judge.compare import judge
from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.figures import Peaks, RankFigures, Step
from gpu_budget.model.result import Measurement

MiB, GiB = 2**20, 2**30
TOL = Tolerance(rel=0.005, abs=4 * MiB)
EIGHT_GIB = Budget(ram=8 * GiB)
CLIMBS = "warning: host RAM climbs and falls back every 8 steps"


def tooth(base: float, n: int = 20) -> list[int]:
    """A buffer climbing 16 MiB a step, freed every 8th step keeping 4 MiB of it for good (tests/integration's
    TOOTH): 20 steps read steady, with two tops too few to read a leak under them (Projection.few_tops)."""
    kept, buffer, out = 0, 0, []
    for k in range(1, n + 1):
        kept, buffer = (kept + 4, 0) if k % 8 == 0 else (kept, buffer + 16)
        out.append(int((base + kept + buffer) * MiB))
    return out


def line(base: float, per_step: float, n: int = 20) -> list[int]:
    return [int((base + per_step * k) * MiB) for k in range(1, n + 1)]


def launch(*series: list[int], ids: list[int] | None = None) -> Measurement:
    """A launch of one rank per series (ranks 0.. unless `ids`), the row's steps the worst rank's by peak."""
    ranks = tuple(RankFigures(k, Peaks(ram=max(s), ram_tree=max(s)),
                              steps=tuple(Step(step=i, ram=v, ram_tree=v) for i, v in enumerate(s, 1)))
                  for k, s in zip(ids or range(len(series)), series, strict=True))
    worst = max(ranks, key=lambda r: r.peaks.ram_tree)
    return Measurement(status="ok", peaks=worst.peaks, steps=worst.steps, ranks=ranks)


def said(m: Measurement, budget: Budget = EIGHT_GIB, steps: int = 10_000) -> list[str]:
    j = judge(m, budget, None, TOL, ci=False, update=False, steps=steps)
    assert j.passed, j.message
    return j.message.split("; ")


def test_a_rank_that_climbs_and_falls_back_under_a_flat_worst_rank_is_warned_of_by_name():
    """Rank 1's buffer is freed every 8th step; rank 0, flat and larger, is the row's. The warning was read off the
    row's steps alone: the launch passed on "host RAM steady ..." with no word that rank 1's two tops are too few to
    read a leak under them, as a single process is told."""
    notes = said(launch(line(2000, 0), tooth(1000)))
    assert any(n.startswith(f"rank 1: {CLIMBS}") for n in notes), notes


def test_the_worst_rank_s_climbs_are_warned_of_by_its_name_not_as_the_launch_s():
    """Rank 0 (the row's) climbs and falls back; rank 1 keeps 1 MiB a step, within the budget. The warning was the
    row's, unnamed ("warning: host RAM climbs and falls back ..."), as if of every rank."""
    notes = said(launch(tooth(2000), line(1000, 1)))
    assert any(n.startswith(f"rank 0: {CLIMBS}") for n in notes), notes
    assert not any(n.startswith(CLIMBS) for n in notes), notes


def test_each_rank_that_climbs_and_falls_back_is_warned_of_once_by_its_own_name():
    notes = said(launch(tooth(1000), tooth(1100), line(900, 0)))
    assert [n.split(":")[0] for n in notes if CLIMBS in n] == ["rank 0", "rank 1"], notes


def test_each_rank_is_checked_once_for_the_launch(monkeypatch):
    """The row's check and one per rank, shared by the breaches, the undecided and the warnings: each read the
    ranks' figures with check() of its own before (7 checks for a launch of two ranks)."""
    calls = []
    real = growth.check
    monkeypatch.setattr(growth, "check", lambda *a, **k: calls.append(1) or real(*a, **k))
    said(launch(line(2000, 0), tooth(1000)))
    assert len(calls) == 3


def test_a_rank_that_grows_within_the_budget_is_said_by_name_beside_the_row_s_steady_reading():
    """Rank 1 keeps 1.5 MiB a step, past the clean allowance, within a 20 GiB budget by step 10,000; rank 0, flat and
    larger, is the row's. A single process is told "host RAM grows 1.50 MiB/step ..., within budget"; the launch said
    "host RAM steady ..." alone, its one growing rank unsaid."""
    notes = said(launch(line(2000, 0, 12), line(500, 1.5, 12)), Budget(ram=20 * GiB))
    assert notes[0].startswith("host RAM steady"), notes
    assert any(n.startswith("rank 1: host RAM grows 1.50 MiB/step") and n.endswith("within budget 20.00 GiB")
               for n in notes), notes


def test_a_rank_that_grows_past_the_declared_length_is_said_by_name():
    """steps=1 under a 12-step run: nothing is projected, rank 1's growth of 3 MiB a step is said with its measured
    peak, as a single process's is."""
    notes = said(launch(line(900, 0, 12), line(300, 3, 12)), Budget(ram=2 * GiB), steps=1)
    assert any(n.startswith("rank 1: host RAM grows 3.00 MiB/step") and "already past the run's declared length" in n
               for n in notes), notes


def test_the_row_s_own_growth_within_the_budget_is_said_once():
    """The worst rank grows within the budget: the row's reading is its, said once, not again under its name."""
    notes = said(launch(line(2000, 1.5, 12), line(500, 0, 12)), Budget(ram=20 * GiB))
    assert sum("grows 1.50 MiB/step" in n for n in notes) == 1, notes


def test_the_row_s_reading_is_held_to_its_own_rank_s_recorded_runs():
    """The recorded runs' worst rank was rank 1, whose steps rose 3 MiB a step (the row's spread: 18 MiB/step
    allowed); rank 0's own runs read none. Now rank 0 is the worst, keeping 1.5 MiB a step. The row read rank 0's steps
    against rank 1's noise: "host RAM steady ... (1.50 MiB/step, within its recorded allowance 18.00 MiB/step ...)",
    beside rank 0's own reading against the clean allowance, "rank 0: host RAM grows 1.50 MiB/step"."""
    from gpu_budget.model.entry import Entry, Spread

    m = launch(line(2000, 1.5, 12), line(500, 0, 12))
    spread = Spread(3, {}, {"ram_tree": 3 * MiB}, ranks={0: Spread(3, {}, {"ram_tree": 0}),
                                                        1: Spread(3, {}, {"ram_tree": 3 * MiB})})
    entry = Entry(m.peaks, ranks={r.rank: r.peaks for r in m.ranks}, spread=spread)
    j = judge(m, Budget(ram=20 * GiB), entry, TOL, ci=False, update=False, steps=10_000)
    notes = j.message.split("; ")
    assert j.passed and notes[0].startswith("host RAM grows 1.50 MiB/step"), notes
    assert sum("grows 1.50 MiB/step" in n for n in notes) == 1, notes
    (row,) = j.projection.record().projections
    assert (row.grows, row.allowance_runs) == (True, None), row


def test_every_rank_that_grows_alike_is_said_but_the_row_s_own():
    """Two ranks keep 1.5 MiB a step alike: the row's reading is rank 0's (the worst of a tie is the lowest rank), and
    rank 1's, word for word the same, was dropped as if it were the row's own."""
    notes = said(launch(line(2000, 1.5, 12), line(2000, 1.5, 12)), Budget(ram=20 * GiB))
    assert notes[0].startswith("host RAM grows 1.50 MiB/step"), notes
    assert sum("grows 1.50 MiB/step" in n for n in notes) == 2, notes
    assert any(n.startswith("rank 1: host RAM grows 1.50 MiB/step") for n in notes), notes
