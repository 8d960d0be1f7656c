"""A leak is a slope: the growth per step still going on at the end of the run, projected to the real run's length.

A short gate run sees a leak that keeps 1.5 MiB per step as a few percent on
its peak; over a real run of 10,000 steps it is 15 GiB. The marker's `steps=`
gives that length, and this rule projects the measured growth to it, for host
RAM (the gated figure: `ram_tree`, else `ram`) and GPU allocated memory.

Growth: the median rise of the running peak over the last five judged steps,
read as measured and with spikes of one or two steps at their neighbours' level, the
larger (measure/rises.py, which says which steps are judged and why): the figure the
row reports as its growth. It reads a late leak at its own rate and ignores up
to two one-off jumps; growth that shows in fewer than 3 of those 5 steps is
not growth here, and growth that skips steps held at the top (a leak every other
step) or splits each jump over two steps in the same parts each time is read at
its rate from jump to jump, not at a jump (or its larger part) per step. A run needs rises.MIN_STEPS (9) steps. A run long enough
(rises.scales) is read in blocks of steps too, each block size held to its own
allowance (below), and the reading that grows past its allowance by the most
is judged: a leak too slow per step for the last five steps' noise still rises
over a block of many steps by more than a block's noise.

Allowance: the largest growth clean runs read, per metric (ALLOWANCE says where
each figure comes from); a block of L steps is allowed that over L per step
(SCALED says where that rests), a mark every 10 steps one of 10. An entry
recorded over several runs (--gpu-budget-record-runs) widens it to
SPREAD_MULTIPLE times the largest growth its own runs read, where that is wider: the case's own noise, as its
peaks' spread widens their tolerance (compare.Allowance), never narrower than
the clean runs'; each block size by what its runs read in blocks of that size, since noise step by step is not
noise over many steps (a block size they did not read is not widened). A growth within it is not growth; past it, the
interval is the growth plus or minus the allowance, and the case fails only
when even its low end, projected to the declared step, breaks the budget. A
failing row says that the growth had not stopped by the last judged step, and
what run length would tell a cache still filling from a leak; a row whose
widened allowance would let a leak break its budget says so. A row whose budget
only a climb breaks that the run fell back from and climbed again as it had, in
too few steps to tell a buffer freed every few steps from growth
(measure/freed.py), errs, saying so and how long a run tells, instead of failing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from gpu_budget.measure import freed, rises
from gpu_budget.model.budget import Budget
from gpu_budget.model.entry import SPREAD_MULTIPLE, Spread
from gpu_budget.model.figures import Peaks, RankFigures, Step
from gpu_budget.model.growth import GrowthRecord, ProjectionRecord, allowance_words, recorded_basis
from gpu_budget.model.metric import JUDGED_GROWTH
from gpu_budget.units import format_per_step, format_size

WARMUP, LAST, WINDOW, MIN_STEPS = rises.WARMUP, rises.LAST, rises.WINDOW, rises.MIN_STEPS
# a run with no step at all most often ran its steps unmarked: how to mark them, not "run more steps"
UNMARKED = ("mark each step: gpu_budget.step() in a plain loop, ctx.meter.start(f'train_step_{k}', step=k) in a "
            "run(ctx) runner, callbacks=[gpu_budget.meter_callback(ctx.meter)] for a Trainer there (a Trainer in a "
            "command is marked by the gate)")

# The clean allowance, bytes per step: the most growth the rule reads in runs with no leak.
# Host RAM: 6x (compare.SPREAD_MULTIPLE, the default tolerances' rule) the largest growth of the 38 clean runs of
# benchmarks/results/growth.json's calibration (S1's Trainer script, S5 and a BERT Trainer script at 10 steps; 164 KiB,
# S1's script, whose RSS grows in lumps; RESULTS.md, section 5c; tests/docs/test_growth_report.py re-derives it).
# GPU allocated: the largest rise of a steady step's peak over the one before in the clean cases of
# benchmarks/results/gpu-h200-tiny-2.report.json (S1's worker cases, 20 KiB; every other case flat to the byte;
# S2 left out: its batches change shape by design). A median of rises is never above the largest rise, so no clean
# series of those reads more than that.
RAM_ALLOWANCE = 1_007_616  # 984 KiB/step: benchmarks/RESULTS.md, section 5c
ALLOWANCE = {"ram": RAM_ALLOWANCE, "ram_tree": RAM_ALLOWANCE, "vram_allocated": 20_480}
# Longer runs are read in blocks of judged steps too (rises.scales): a block of L steps may rise by what one step
# may, so its allowance is the metric's / L per step. Clean host-RAM runs of 40 to 200 steps read at most a small
# part of that at every block size (benchmarks/RESULTS.md, section 5g; tests/docs/test_growth_long_report.py holds
# 6x their largest under it). GPU allocated has no long clean runs measured: its steps alone are read.
SCALED = ("ram", "ram_tree")
LABELS = {"ram": "host RAM (main process)", "ram_tree": "host RAM", "vram_allocated": "GPU allocated"}


@dataclass(frozen=True)
class Series:
    """One metric's peak per optimizer step, in the order run (the rule's input)."""

    metric: str
    steps: tuple[int, ...]
    peaks: tuple[int, ...]

    @classmethod
    def of(cls, records: Sequence[Step], metric: str) -> Series | None:
        """The metric's series from a Measurement's step records; None where any step lacks it."""
        peaks = [r.figure(metric) for r in records]
        if not peaks or any(p is None for p in peaks):
            return None
        return cls(metric, tuple(r.step for r in records), tuple(int(p) for p in peaks))


@dataclass(frozen=True)
class Growth:
    """The rule's reading of one series: its window (rises.Rises), the growth per step (their median) and the
    metric's clean allowance."""

    metric: str
    window: rises.Rises
    allowance: float
    run_steps: int  # the steps the run measured: what a longer run is said against
    recorded_runs: int | None = None  # the allowance is SPREAD_MULTIPLE x its entry's runs' growth: how many runs
    per_mark: float = 1.0  # steps from one marked step to the next (a loop marking every 10th step: 10)
    scaled: bool = False  # the run is read in blocks of steps too (fit)
    numbers: tuple[int, ...] | None = None  # the marks' step numbers, where they go back (read in the order run)
    widened: tuple[Growth, ...] = ()  # every reading whose allowance its recorded runs widened, judged or not (blind)

    @property
    def first(self) -> int:
        return self.window.first

    @property
    def last(self) -> int:
        return self.window.last

    @property
    def slope(self) -> float:
        return self.window.growth

    @property
    def peak(self) -> int:
        return self.window.peak

    @property
    def grows(self) -> bool:
        """Past the clean allowance: a growth within it is noise, not growth."""
        return self.slope > self.allowance

    @property
    def interval(self) -> tuple[float, float]:
        return max(0.0, self.slope - self.allowance), self.slope + self.allowance

    @property
    def block(self) -> int:
        """Steps per block of the reading: 1 where each judged step is read on its own."""
        return round(self.window.scale * self.per_mark) if self.window.scale > 1 else 1

    def over(self) -> str:
        """The window's steps, in a row's words: by their numbers, or where the numbers go back (read in the order
        run, rises.in_order), by their place among the marks, with the first number that went back."""
        if self.numbers is None:
            return f"over steps {self.first}-{self.last}"
        back = next(k for k in range(1, len(self.numbers)) if self.numbers[k] <= self.numbers[k - 1])
        each = "one step" if self.stride == 1 else f"{self.stride} steps, as its numbers rise"
        return (f"over the {_nth(self.place(self.first))}-{_nth(self.place(self.last))} marked steps, in the order run "
                f"(its step numbers go back: step({self.numbers[back]}) after step({self.numbers[back - 1]}), so each "
                f"mark is {each})")

    @property
    def stride(self) -> int:
        """Steps per mark where the numbers go back (rises.stride); 1 otherwise."""
        return 1 if self.numbers is None else rises.stride(self.numbers)

    def place(self, step: int) -> int:
        """A judged step's place among the marks where the numbers go back (read at place x stride); else itself."""
        return step if self.numbers is None else step // self.stride

    def at_last(self) -> str:
        """The last judged step, in a row's words (its place among the marks, where the numbers go back)."""
        return f"step {self.last}" if self.numbers is None else \
            f"the {_nth(self.place(self.last))} marked step (step({self.numbers[self.place(self.last) - 1]}))"

    def read_over(self, whose: str = "its") -> str:
        """The steps (or blocks) the window's rises were read at, in a row's words: `whose` last ones, or, where it
        passed over dips, which they were (a sawtooth's four tops among its dips were said to be its last 5 judged
        steps)."""
        w = self.window
        if not w.passed_over:
            return f"{whose} last {len(w.rises)} {self.unit()}"
        at = [str(k) if self.numbers is None else _nth(self.place(k)) for k in w.at]
        listed = ", ".join(at[:-1]) + f" and {at[-1]}"
        listed = f"steps {listed}" if self.numbers is None else f"the {listed} marked steps"
        return (f"the {len(w.rises)} {self.unit()} its window reads, {'at' if w.scale == 1 else 'topped at'} {listed} "
                f"(those between passed over: more than {format_size(rises.DIP)} below the top)")

    def speeds_up(self) -> bool:
        """Each of the window's rises is larger than the one before, the last past the median by more than the
        allowance: growth that speeds up (a leak keeping a few percent more each step), which a straight line at the
        median rise, the projection, understates."""
        r = self.window.rises
        return all(b > a for a, b in pairwise(r)) and r[-1] > self.slope + self.allowance

    def unit(self) -> str:
        """What the window's five rises are of, in a row's words."""
        return "judged steps" if self.window.scale == 1 else f"blocks of {self.block} judged steps"

    def longer_run(self) -> str:
        """What a failing row says of its growth: still going on at the last judged step, and what run tells a cache
        that is still filling from a leak: one that stops filling by step S reads as steady once its last `flat`
        judged steps are flat, and, in a run read in blocks too, once its last `flat` blocks of the largest size are
        (tests/unit/test_growth.py checks this over caches stopping at steps 1 to 300)."""
        flat = WINDOW // 2 + 1
        after = round((flat + LAST) * self.per_mark)  # steps past S: the flat judged marks and the last one
        longer = 2 * self.run_steps
        block = rises.largest_block(round((longer - 1) / self.per_mark) + 1) if self.scaled else 1
        within = longer - round((flat * block + LAST) * self.per_mark)
        blocks = (f", read in blocks of {round(block * self.per_mark)} steps too (steady once its last {flat} blocks "
                  "are flat),") if block > 1 else ""
        w = self.window
        rose = (f"its steps repeat every {w.whole.marks} {self.unit()} and rose by {_per_step(w.whole.least)} or more "
                "over each such period") if w.cycle_floor else f"it rose in {w.rising(self.allowance)} of {self.read_over()}"
        return (f"{rose} and had not "
                f"stopped by {self.at_last()}, the last judged: a leak, or a cache still filling. A cache that stops "
                f"filling by step S reads as steady in a run of S + {after} steps or more (its last {flat} judged steps "
                f"flat), so a run of {longer} steps{blocks} tells a cache that fills within {within} steps from a leak")


def fit(series: Series, allowance: float, recorded: Spread | None = None, scaled: bool = False) -> Growth | None:
    """The rule's reading of a series; None with fewer than MIN_STEPS steps. `recorded`: the entry's spread, whose
    runs' largest growth at each block size widens that size's allowance to SPREAD_MULTIPLE times it where that is
    wider (a size its runs did not read keeps the clean allowance). `scaled`: read the
    run in blocks too (rises.scales), a block of L steps allowed `allowance` / L per step; else its steps alone.

    Each reading is held to its own allowance; the one that grows past it by the most is judged, and where none
    does, the steps' own (the row's `growth`)."""
    readings = rises.scales(series.steps, series.peaks)
    if not readings:
        return None
    numbers = rises.run_order(series.steps)  # numbers that go back: each mark's place in the order run, x its stride
    run = numbers[-1] - numbers[0] + 1
    ordered = rises.in_order(series.steps)
    fits = []
    for window in readings if scaled else readings[:1]:
        per_mark = spacing(numbers, window)
        clean = allowance / (window.scale * per_mark) if scaled else allowance  # per step a block of its steps spans
        own = recorded.growth_at(series.metric, window.scale) if recorded is not None else None
        widened = own is not None and SPREAD_MULTIPLE * own > clean
        fits.append(Growth(series.metric, window, SPREAD_MULTIPLE * own if widened else clean, run,
                           recorded.runs if widened else None, per_mark, scaled,
                           None if ordered else series.steps))
    judged = max(fits, key=lambda g: g.slope - g.allowance)  # a tie: the steps' own, listed first
    return replace(judged if judged.grows else fits[0], widened=tuple(g for g in fits if g.recorded_runs is not None))


def spacing(steps: Sequence[int], window: rises.Rises) -> float:
    """Steps per mark over the window the reading judged (numbers in order): its steps' span over the marks in it. The
    run's mean would hold marks one step apart after a gap in their numbers (a run resumed at step 1001 after step
    15) to a 35th of one step's allowance, and a clean run's lumps past it."""
    marks = sum(window.first < s <= window.last for s in steps)
    return (window.last - window.first) / marks if marks else 1.0


def largest(runs: Sequence[Sequence[Step]]) -> dict[str, int]:
    """Per metric the rule reads, the largest growth per step any of the runs read (a baseline's Spread.growth); a
    metric is left out where a run lacks it or is too short to read one."""
    out = {}
    for metric in JUDGED_GROWTH:
        read = [None if s is None else rises.of(s.steps, s.peaks) for s in (Series.of(r, metric) for r in runs)]
        if read and all(w is not None for w in read):
            out[metric] = round(max(w.growth for w in read))
    return out


def largest_blocks(runs: Sequence[Sequence[Step]], scaled: Sequence[str] = SCALED) -> dict[str, dict[int, int]]:
    """Per metric read in blocks too (SCALED), per block size of 2 judged marks or more every run is long enough for,
    the largest growth per step any of the runs read in blocks of that size (a baseline's Spread.blocks): a run's
    noise step by step says nothing of its growth over blocks of 16 steps, where a leak too slow for the steps
    shows."""
    out = {}
    for metric in scaled:
        series = [Series.of(r, metric) for r in runs]
        if not series or any(s is None for s in series):
            continue
        read = [{w.scale: w.growth for w in rises.scales(s.steps, s.peaks)[1:]} for s in series]
        sizes = set.intersection(*(set(r) for r in read))
        if sizes:
            out[metric] = {size: round(max(r[size] for r in read)) for size in sorted(sizes)}
    return out


def tops_run(every: float) -> int:
    """About how many marked steps a run needs to hold rises.MIN_TOP tops after the first of teeth `every` steps apart
    where the rule reads them: all its judged steps in a short run, its last half from rises.LONG judged steps on."""
    short = round((rises.MIN_TOP + 1) * every)  # the first tooth's top sets the level the next ones rise from
    judged = short if short < rises.LONG else max(rises.LONG, round(2 * rises.MIN_TOP * every))
    return judged + rises.WARMUP + rises.LAST


def _nth(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@dataclass(frozen=True)
class Projection:
    """One metric's growth projected to the declared step, against its budget (None: no budget for it)."""

    growth: Growth
    at_step: int
    budget: int | None
    floor: int  # the run's measured peak of the metric: a projection never reads below what was measured
    freed_climb: freed.Freed | None = None  # a climb the run fell back from and climbed again, too few marks to tell (short)

    def at(self, slope: float) -> int:
        return max(self.floor, round(self.growth.peak + slope * max(0, self.at_step - self.growth.last)))

    @property
    def projected(self) -> int:
        return self.at(self.growth.slope) if self.growth.grows else self.floor

    @property
    def breaks(self) -> bool:
        """Even the interval's low end breaks the budget at the declared step."""
        return self.growth.grows and self.budget is not None and self.at(self.growth.interval[0]) > self.budget

    @property
    def undecided(self) -> bool:
        """It breaks the budget on a climb the run fell back from and climbed again as it had (measure/freed.py), in
        fewer marks than a buffer freed that often needs (tops_run): a leak and such a buffer read alike here."""
        return self.breaks and self.freed_climb is not None

    def too_short(self) -> str:
        """Why an undecided projection is no verdict, and how long a run tells (tops_run)."""
        f, g = self.freed_climb, self.growth
        every = round(f.period * g.per_mark)
        return (f"too few steps to tell a periodic buffer from growth: its steps climbed {_per_step(f.climb)}, fell "
                f"{format_size(f.fall)} at step {f.fell_at} (memory freed) and climbed again as they had, as a buffer "
                f"freed every {every} steps or more does, and as a leak begun after memory was freed does; a run of "
                f"{round(tops_run(f.period) * g.per_mark):,} steps or more tells a buffer freed every {every} steps "
                f"from a leak ({g.run_steps} measured)")

    def describe(self) -> str:
        g = self.growth
        what, over = LABELS[g.metric], g.over()
        if g.window.scale > 1:
            over += f", in {g.unit()}"
        if g.window.envelope == rises.DESPIKED:
            over += ", spikes of one or two steps read at their neighbours' level"
        if not g.grows:
            return f"{what} steady {over} ({_per_step(g.slope)}, within {allowance_words(g.allowance, g.recorded_runs)})"
        low, high = g.interval
        text = (f"{what} grows {_per_step(g.slope)} {over} ({format_per_step(high, low)} with "
                f"{'the clean allowance' if g.recorded_runs is None else 'its recorded allowance'}): " + self._where())
        if self.budget is None:
            return text + " (no budget to compare)"
        if self.undecided:
            return text + f" > budget {format_size(self.budget)}, but {self.too_short()}"
        if self.breaks:
            return text + f" > budget {format_size(self.budget)}; {g.longer_run()}"
        if self.projected > self.budget:  # the low end decides (breaks): name it, not the projection, as within
            text += f"; its low end about {format_size(self.at(low))}"
        return text + f", within budget {format_size(self.budget)}"

    def _where(self) -> str:
        """The projection and its step; a run measured up to the declared step or past it projects nothing: the
        figure is the measured peak, said as such, not as the figure at the declared step (a 60-step run under
        steps=20 read "about 352.33 MiB at step 20", the peak of its step 59). A growth that speeds up is said to
        reach more than the line (a leak keeping 10% more each step read "about 45.81 GiB at step 10,000" alone)."""
        g = self.growth
        if self.at_step > g.last and g.speeds_up():
            return (f"about {format_size(self.projected)} at step {self.at_step:,} on a straight line, an understatement: "
                    f"its rises grew at each of its last {len(g.window.rises)} {g.unit()}, to "
                    f"{_per_step(g.window.rises[-1])}, and growth that keeps speeding up reaches more")
        if self.at_step > g.last:
            return f"about {format_size(self.projected)} at step {self.at_step:,}"
        return (f"{format_size(self.projected)} measured by {self.growth.at_last()}, already past the run's declared "
                f"length (steps={self.at_step:,})")

    def blind(self) -> str | None:
        """The row's warning where its recorded runs widened an allowance so far that a leak within it breaks the
        budget by the declared step (the rule cannot catch it), else None. Any reading's: a row judged by its steps
        against the clean allowance is blind all the same where its blocks' allowance was widened (a slow leak
        recorded over 200 steps reads within it in blocks, and within the clean one step by step)."""
        w = max(self.growth.widened, key=lambda r: r.allowance, default=None)
        if w is None or self.budget is None or self.at(w.allowance) <= self.budget:
            return None
        blocks = "" if w.window.scale == 1 else f" in {w.unit()}"
        return (f"warning: {LABELS[w.metric]}'s recorded runs widen its growth allowance{blocks} to "
                f"{_per_step(w.allowance)} {recorded_basis(w.recorded_runs)}, so a leak within it reads as steady, though "
                f"it reaches about {format_size(self.at(w.allowance))} at step "
                f"{self.at_step:,} > budget {format_size(self.budget)}: run more steps, whose late steps grow less, "
                "and record again")

    def few_tops(self) -> str | None:
        """The row's warning where it reads steady though its steps climb and fall back (a buffer freed every few
        steps: rises._freed_climbs, whose climbs are no growth) and the stretch it reads holds fewer of their tops
        than the rule reads growth over: a leak under them shows in those tops alone, so this run cannot tell one.
        None otherwise, and where the run measured up to the declared step or past it (nothing projected): a leak
        under its tops reaches no further than the steps measured."""
        g, tops = self.growth, self.growth.window.teeth
        if g.grows or not tops or self.at_step <= g.last:
            return None
        read = [t for t in tops if t >= g.window.tops_from]
        every = (tops[-1] - tops[0]) / (len(tops) - 1) if len(tops) > 1 else None
        how, needs = "", ""
        if every is not None:
            how, needs = f" every {every:g} steps", f"; a run of about {tops_run(every):,} steps holds enough"
        return (f"warning: {LABELS[g.metric]} climbs and falls back{how} (memory freed, its climbs no growth), so a "
                f"leak under it shows in its tops alone: the steps read hold {len(read)} of them, too few to read growth "
                f"over ({rises.MIN_TOP} rises of the top), so steady says nothing of such a leak{needs}")

    def record(self) -> ProjectionRecord:
        """What the row keeps of this projection."""
        g = self.growth
        low, high = g.interval
        rule = f"median rise of the {g.window.envelope} over {g.read_over('the')}"
        if g.window.cycle_floor:
            rule += (f", raised to the least its {g.unit()} rose over one period, as measured (they repeat every "
                     f"{g.window.whole.marks}: measure/cycle.py)")
        elif g.window.by_cycle:
            rule += (f", held to the most its {g.unit()} rose over one period, as measured (they repeat every "
                     f"{g.window.cycle.marks}: measure/cycle.py)")
        elif g.window.period:
            rule += f", read at the rate over its last whole periods (its rises repeat every {g.window.period} steps"
            rule += "; the last, a climb begun again after dips, left out)" if g.window.begun_again else ")"
        elif g.slope < g.window.median:
            rule += f", held to the rate from the first of its largest rises to the last ({g.window.capped})"
        return ProjectionRecord(g.metric, (g.place(g.first), g.place(g.last)), tuple(g.window.rises), rule, round(g.slope),
                                (round(low), round(high)), round(g.allowance), g.grows, self.at_step, self.projected,
                                self.budget, self.breaks, g.recorded_runs, g.block)


@dataclass(frozen=True)
class Check:
    """The growth rule's answer for one case: a projection per metric measured, or why none could be made."""

    steps: int | None  # the declared run length (None: none declared, nothing checked)
    projections: tuple[Projection, ...] = ()
    problem: str | None = None
    ranks: tuple[RankCheck, ...] | None = None  # a launch's: each rank's own check (rank_checks), whose warnings
    # are said, named, in place of the row's

    @property
    def breaches(self) -> list[str]:
        return [p.describe() for p in self.projections if p.breaks]

    @property
    def certain(self) -> list[str]:
        """The breaches less those too short to tell from a buffer (Projection.undecided): no verdict, not a breach."""
        return [p.describe() for p in self.projections if p.breaks and not p.undecided]

    @property
    def notes(self) -> list[str]:
        """The readings within the budget, then the warnings (Projection.blind, few_tops): a launch's each rank's,
        named, not the row's, whose steps are one rank's (the worst by peak), which need not be the rank warned of;
        so a rank that grows within the budget is said by name beside the row's reading (its own, said once)."""
        said = [p.describe() for p in self.projections if not p.breaks]
        if self.ranks is None:
            return said + [w for p in self.projections for w in _warnings(p)]
        row, grows = list(said), []  # the row's reading is one rank's: that one occurrence is not said again
        for r in self.ranks:
            for d in (p.describe() for p in r.check.projections if p.growth.grows and not p.breaks):
                if d in row:
                    row.remove(d)
                else:
                    grows.append(f"rank {r.rank}: {d}")
        return said + grows + [f"rank {r.rank}: {w}" for r in self.ranks for p in r.check.projections for w in _warnings(p)]

    def record(self) -> GrowthRecord:
        """What the row keeps of the answer (Result.growth_projection)."""
        return GrowthRecord(self.steps, self.problem, tuple(p.record() for p in self.projections))


def check(records: Sequence[Step], peaks: Peaks, budget: Budget, steps: int | None,
          allowance: Mapping[str, float] = ALLOWANCE, recorded: Spread | None = None,
          scaled: Sequence[str] = SCALED, unmarked: str = UNMARKED) -> Check:
    """Project a case's growth to `steps` (None: no run length declared, an empty Check).

    records: the Measurement's step records; peaks: its peaks (the floor of each
    projection). Host RAM is the gated figure (ram_tree where every step has it).
    recorded: the baseline entry's spread, whose runs' growth may widen the allowance (fit).
    unmarked: what a run that measured no step is told (unmarked_ranks under a launcher).
    """
    if steps is None:
        return Check(None)
    ram = Series.of(records, "ram_tree") or Series.of(records, "ram")
    budgets = {"ram": budget.ram, "ram_tree": budget.ram, "vram_allocated": budget.vram}
    projections = []
    for series in (ram, Series.of(records, "vram_allocated")):
        growth = fit(series, allowance[series.metric], recorded, series.metric in scaled) if series else None
        if growth is not None:
            floor = max(peaks.figure(series.metric) or 0, *series.peaks)
            projections.append(Projection(growth, steps, budgets[series.metric], floor, _short_freed(series, growth)))
    if not projections:
        return Check(steps, problem=(
            f"steps={steps:,} declared, but the run measured {len(records)} optimizer step(s): projecting its growth "
            f"needs at least {MIN_STEPS} (the first {WARMUP} are warm-up, then {WINDOW + 1} judged for {WINDOW} rises, "
            f"and the last is left out); {unmarked if not records else 'run more steps at this scale'}, or declare "
            "steps= only for the scales that run them ({'real': ...})"))
    undecided = [p for p in projections if p.breaks]
    if undecided and all(p.undecided for p in undecided):  # a budget broken only by climbs a buffer may free: no verdict
        return Check(steps, tuple(projections), "; ".join(p.describe() for p in undecided))
    return Check(steps, tuple(projections))


def _short_freed(series: Series, growth: Growth) -> freed.Freed | None:
    """The climb-fall-climb the series ends in (measure/freed.py), where its marks are fewer than tops_run asks of a
    buffer freed as often as it climbs; None otherwise (a long run's one chance fall is no buffer)."""
    found = freed.of(series.steps, series.peaks, growth.slope)
    return found if found is not None and len(series.peaks) < tops_run(found.period) else None


def unmarked_ranks(ranks: Sequence[RankFigures]) -> str:
    """What a launch that measured no step is told: where its other ranks marked steps (unread_steps), that rank 0
    marked none and only rank 0's are read, not to mark steps the script marks; else UNMARKED."""
    unread = [r for r in ranks if r.unread_steps]
    if not unread:
        return UNMARKED
    which = ", ".join(f"rank {r.rank} marked {r.unread_steps}" if r.rank else f"another process of rank 0 marked "
                      f"{r.unread_steps}" for r in unread)
    return (f"rank 0 marked no step, and only rank 0's are read ({which}, not read): under a launcher rank 0's own "
            "process marks the steps and every rank's figures are read at them (the ranks meet at every "
            "collective), so mark each step in rank 0's process too")


def short_rank(ranks: Sequence[RankFigures], steps: int | None) -> str | None:
    """Why a launcher case's growth cannot be projected for every rank under steps=, or None: a budget applies to
    each rank, so a rank that measured fewer than MIN_STEPS steps (its processes seen in fewer of the run's steps:
    a rank that started late or ended early) is a rank unchecked, an error as a single-process case's is."""
    if steps is None or not ranks:
        return None
    run = max(len(r.steps) for r in ranks)
    short = [r for r in ranks if len(r.steps) < MIN_STEPS]
    if not short or run < MIN_STEPS:  # the row's own check names a run too short for every rank
        return None
    which = ", ".join(f"rank {r.rank} measured {len(r.steps)} of the run's {run} optimizer step(s)" for r in short)
    return (f"steps={steps:,} declared, but {which}: projecting a rank's growth needs at least {MIN_STEPS} of its own "
            f"steps (the first {WARMUP} are warm-up, then {WINDOW + 1} judged for {WINDOW} rises, and the last is left "
            "out), and a budget applies to each rank, so that rank's growth would go unchecked; its processes were "
            "seen in fewer steps than the run's (a rank that started late or ended early): run more steps, or find "
            "why the rank ran short")


@dataclass(frozen=True)
class RankCheck:
    """One rank's growth, checked once for a launch (rank_checks) and read by its breaches, its undecided and its
    warnings alike: a budget applies to each rank, and the row's steps are its worst rank's by peak."""

    rank: int
    check: Check


def rank_checks(ranks: Sequence[RankFigures], budget: Budget, steps: int | None,
                recorded: Spread | None = None) -> tuple[RankCheck, ...]:
    """Each rank's growth checked against the budget, held to its own recorded runs (_own)."""
    return tuple(RankCheck(r.rank, check(r.steps, r.peaks, budget, steps, recorded=_own(recorded, r.rank)))
                 for r in ranks)


def rank_undecided(checks: Sequence[RankCheck]) -> str | None:
    """Why a launcher case's growth is no verdict, each such rank named, or None: a rank whose budget only a climb
    too short to tell from a buffer breaks (check's problem), where no rank's growth breaks it for certain. The row's
    steps are its worst rank's by peak, which need not be that rank; a rank too short for steps= is short_rank's."""
    if any(r.check.certain for r in checks):
        return None
    return "; ".join(f"rank {r.rank}: {r.check.problem}" for r in checks if r.check.problem) or None


def rank_breaches(checks: Sequence[RankCheck], certain: bool = False) -> list[str]:
    """A launcher case's projections past the budget, each rank's named: a budget applies to each rank, and the
    row's steps are its worst rank's by peak, which need not be the rank that grows. A rank that measured too few
    steps is an error before this (short_rank). certain: leave out those too short to tell (Check.certain)."""
    return [f"rank {r.rank}: {breach}" for r in checks for breach in (r.check.certain if certain else r.check.breaches)]


def _warnings(projection: Projection) -> list[str]:
    """A projection's warnings: an allowance its recorded runs widened past the budget, tops too few to read."""
    return [w for w in (projection.blind(), projection.few_tops()) if w]


def _own(recorded: Spread | None, rank: int) -> Spread | None:
    """The recorded spread a rank's growth is held to: its own runs' (Spread.of_rank)."""
    return None if recorded is None else recorded.of_rank(rank)


def _per_step(nbytes: float) -> str:
    return format_per_step(nbytes)
