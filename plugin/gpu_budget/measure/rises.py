"""A run's growth per step: the median rise of its running peak over the last judged steps.

One figure per metric, computed once here and reported as the row's growth
(`growth["<metric>_per_step"]`) and judged by judge/growth.py, so the JSON
never holds two growths for one series.

Steps left out: the first two (warm-up) and the last. The first allocates the
optimizer state, so every later step peaks above it; the second is where host
RAM's allocator settles (S1's Trainer script: about +1 MiB from step 2 to 3).
A Trainer's step phase also holds the loading of the next step's batch
(measure/hf_trainer.py), which its last step has none of.

The figure: the running peak over the judged steps, its rise per step at each
step, and the median of the last WINDOW rises (of an even number, the lower
middle one). The median reads growth that is still going on at the end of the
run, whenever it began (a leak that starts late is read at its own rate), and is
blind to up to two one-off jumps in the window (a cache made once, two caches,
lazy optimizer state): growth must show in at least 3 of the last 5 judged
steps. A top held after dips counts for the steps it held it over: where the
window ends in steps back at the top after dips, holding it since its last
rise (a sawtooth's tops, every 4th step, after its first climb), each counts
for the steps since the one before it, so a first cycle's climb of three
one-step rises is not read as growth still going on beside two tops held over
eight steps. Where a step that held the running peak to the byte (kept all, added
nothing) lies between two of the window's steps that rose by the median or
more, the growth is no more than the rate from the first of those to the last:
a leak every other step reads its rate, not a whole jump per step where its
jumps are 3 of the 5 (a step below the peak, noise, says nothing of what was
added, and a step read on a spike's line holds nothing). So too where the
window's rises alternate big and small, each kind repeating to within REPEAT
and each small one a measured step past the top: a leak whose jump lands
partly in the next step, or a sawtooth whose flush falls below the top, reads
its rate, not the larger part of each period's growth per step (rises that
alternate by chance, under noise, do not repeat). Where all five rises repeat
every PERIODS steps in kinds more than REPEAT apart, the largest seen twice,
the growth is the rate over their last whole periods: the same torch loop in
its other phase (small rises 3 of the 5) reads its rate, not the small part,
and so does a leak every 3rd step split over two steps; where a sawtooth's run ends mid-climb, its last rise a
climb past the top after its tops repeated every other step, over the whole periods before it. A step that peaks more
than DIP below the running peak (a sawtooth's low step, a step without an
evaluation's buffers, S1's Trainer steps 8-9) shows nothing of the top and is
passed over, so the window holds the last five steps
that reached it, each one's rise divided by the steps since the one before it
(a sawtooth's top rises over two steps; a step climbing back from a dip to within
DIP of the top without passing it has not reached it, so the top after it rises
over the steps since the top before; a tooth, a climb of three steps or more
rising alike that the run fell back from and climbed again as it had, is passed
over, its top the level the next tooth's top rises from: a run begun on a buffer
freed every 8th step read its climb), in a run of LONG (20) judged steps or more
among its last half; where fewer than four of those did, it holds the last
five steps, a dip counting as no rise (a window of four or five still ignores
two jumps): a top reached early in a long run whose later steps all fell below
it is not growth still going on. A shorter run's tops are read among all its
steps: there the last half lost more leaks under noise than it spared clean runs
(RESULTS.md 5h). A run that ends in more than WINDOW dips, more than any earlier stretch
of them, freed memory for good (a cache cleared): its steps after the free are
read on their own running peak, so a leak after it is read and growth before it
is not taken for growth still going on. Steps are counted by their numbers: a loop that marks every
10th step has each mark's rise divided by 10 (numbers that repeat or go back,
restarted each epoch, are read in the order run, each mark the steps its numbers rise by).

Where the measured steps of the stretch the window's tops are taken from repeat
every few steps far more closely than from one step to the next (a buffer freed
every p steps, measure/cycle.py), the growth is no more than the most they rose
over one such period, per step: steps a whole period apart differ by what the
flushes kept and by noise alone, so a sawtooth under noise, whose tops the
readings above compare to within a few pages, reads what it keeps, not its
climb (RESULTS.md 5k); noise and a leak without a period repeat at no lag. Where all the judged steps
repeat so over four periods or more, the growth is no less than the least they
rose over one period, per step: a leak at each end of epochs of 6 steps rises on
2 of the last five steps, one-off jumps to the median, and read steady.

The running peak is read twice, as measured and with each spike of one or two
steps (steps each more than SPIKE, 4 MiB, above both steps around them: an
evaluation's buffers, a scratch tensor held over a step or two) read on the
line between those two steps, no steeper than the steps either side of it rise
(a spike that leaves memory behind, an evaluation that keeps its data set,
rises into the step after it as one jump, not as growth on each of its steps),
and the reading that grows more is judged. SPIKE
sits above the bumps S1's clean Trainer steps make (RESULTS.md 5c gives the
largest): read as spikes, those made up growth of their own. A spike lifts the
running peak above a leak until the leak catches up with it, which a short run
may not see (a scratch tensor early in a run of ten steps, the catalogue's
shape). A spike that lasts three steps or more still does: so many high steps
are the run's level as much as a spike. A buffer's top that climbs on as the
steps into it did is lowered so too wherever the run saw its fall; where those
tops repeat (a buffer that keeps nothing), the run's last climb, whose fall
lies past its end, is read no higher than the step they climbed from, else its
rise past the lowered tops read as growth (RESULTS.md 5k).

A run long enough is read in blocks of steps too (`scales`): blocks of 2, 4,
8, ... judged steps counted back from the last, each block's figure its
highest step's, at the step it was measured (the first of equal ones: where the
block reached it), read as the steps are (both
readings, dips, the median of the last WINDOW rises) while the last WINDOW
blocks lie within the run's last half. The row's growth stays the steps' own;
judge/growth.py holds each block size to its own allowance. What the rule cannot
tell apart in a short run (a cache still filling from a leak, a leak that adds
on fewer than 3 of 5 steps from one-off jumps, inputs that grow each step from
a leak) is said in docs/declaring.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import accumulate, pairwise

from gpu_budget.measure import cycle as cycles

WARMUP = 2  # optimizer steps left out first: the optimizer state's step, then the allocator's settling step
LAST = 1  # and last: a Trainer's last step loads no next batch
WINDOW = 5  # the rises judged: the last five; their median sees growth in 3 of them, and ignores 2 jumps
MIN_STEPS = WARMUP + WINDOW + 1 + LAST  # 9: five rises need six judged steps
MIN_TOP = 4  # steps that reached the running peak: fewer, and the window is the last WINDOW steps, dips as no rise
LONG = 4 * WINDOW  # judged marks from which the window's tops are taken among the last half (_window)
DIP = 2**20  # this far below the running peak: a dip, showing nothing of the top
REPEAT = 64 * 2**10  # rises this close are one kind: the same work each period, to a few pages (Rises.period)
PERIODS = (2, 3)  # the periods a window of five rises sees repeat twice (Rises.period)
TWICE = (2,)  # the period four rises see twice over (Rises.begun_again)
SPIKE = 4 * 2**20  # this far above both steps around it: a spike; above the clean runs' bumps (RESULTS 5c)
SPIKE_STEPS = 2  # the longest spike read on its neighbours' line: an evaluation or a scratch tensor over two steps
PEAK, DESPIKED = "running peak", "running peak without spikes of one or two steps"  # the two readings (of)
CLIMB, TOP = "climb", "top"  # a step's part in a tooth (_freed_climbs)
TOOTH_NOISE = 0.25  # a tooth's climbs rise alike to within this share of their mean too: a buffer's steps under noise


@dataclass(frozen=True)
class Rises:
    """The running peak's rise per step at each step of the window (bytes), the window's steps, and the peak it ends
    at."""

    first: int  # the step the window's first rise is counted from
    last: int  # the last step judged
    rises: tuple[int, ...]  # one per step of the window (after `first`, up to `last`), in order
    peak: int  # the running peak at `last`: where a projection starts
    dips: tuple[int, ...] = ()  # the judged steps passed over: more than DIP below the running peak
    envelope: str = PEAK  # which reading the rises are of: PEAK or DESPIKED
    scale: int = 1  # judged marks per block: 1, each step its own (scales)
    at: tuple[int, ...] = ()  # the step each of the window's rises is read at
    levels: tuple[int, ...] = ()  # the running peak there
    held: tuple[bool, ...] = ()  # whether that step held the top before it to the byte: kept all, added nothing
    reached: tuple[bool, ...] = ()  # whether its measured figure reached that top (held it or rose past it)
    late: bool = False  # the window's steps were taken among the run's last half (a run of LONG judged marks or more)
    spans: tuple[int, ...] = ()  # how many steps each rise counts for in the median (`_spans`); () each one
    # where the window holds fewer than MIN_TOP tops and the run has teeth (_freed_climbs): the steps of its tops (the
    # teeth's, and each step that reached the top after the first tooth's), and the first step of the stretch the
    # window's tops are taken from; a leak under a buffer freed every few steps shows in those tops alone
    teeth: tuple[int, ...] = ()
    tops_from: int = 0
    # where the measured steps (or blocks) from `tops_from` on repeat every few (cycle.of): the most they rose over
    # one such period, per step, which the growth is no more than
    cycle: cycles.Cycle | None = None
    # where the measured steps (or blocks) over all the judged ones repeat every few: the least they rose over one such
    # period, per step, which the growth is no less than (`cycle_floor`)
    whole: cycles.Cycle | None = None

    @property
    def growth(self) -> float:
        """Bytes per step: the window's own reading (`rise_rate`), held to no more than the most the measured steps
        rose over one period where they repeat (`cycle`): a buffer freed every few steps, under noise, is read at what
        its flushes keep, not at its climb."""
        rate = self.rise_rate if not self.by_cycle else self.cycle.most
        return rate if not self.cycle_floor else self.whole.least

    @property
    def cycle_floor(self) -> bool:
        """Whether the growth is the least the measured steps rose over one period (`cycle`), above the window's
        reading: each period kept that much, though its jumps rise on fewer than 3 of the window's steps (a leak at
        each end of epochs of 6 steps read 0.00 MiB/step for 1)."""
        return self.whole is not None and self.whole.least > self.rise_rate

    @property
    def by_cycle(self) -> bool:
        """Whether the growth is the measured steps' most over one period (`cycle`), below the window's reading."""
        return self.cycle is not None and self.cycle.most < self.rise_rate

    @property
    def rise_rate(self) -> float:
        """The window's reading: the median rise over it (of an even number, the lower middle one); where the rises
        repeat every `period` steps, the rate over their last whole periods (a leak whose jump lands partly in the next
        step, or every 3rd step, reads its rate, not its large part nor its small one); else held, where `capped`
        says why, to no more than the rate from the first of the rises of the median or more to the last: growth that
        skips steps is read at its rate, not at the whole jump each of its rising steps reads when they are 3 of 5."""
        median, period = self.median, self.period
        if period:
            end = len(self.rises) - 1 - self.begun_again  # a period begun again: its climb left out
            whole = period * (end // period)
            return (self.levels[end] - self.levels[end - whole]) / (self.at[end] - self.at[end - whole])
        if not self.capped:
            return median
        rose = [i for i, r in enumerate(self.rises) if r >= median]
        first, last = rose[0], rose[-1]
        return min(median, (self.levels[last] - self.levels[first]) / (self.at[last] - self.at[first]))

    @property
    def period(self) -> int | None:
        """The steps (2 or 3, PERIODS) after which the window's rises repeat: all WINDOW of them measured steps at the
        top, falling in kinds more than REPEAT apart, each within REPEAT, the rises a period apart of one kind, and
        the largest kind seen twice. A torch loop whose allocator takes part of each kept tensor a step later rises 12,
        4, 12, 4, 12 MiB (or 4, 12, 4, 12, 4) for 8 MiB/step, whose median read 12 or 4; a leak every 3rd step landing
        over its three steps (8, 4, 4) read 4 for 5.33. None where fewer than 3 of the 5 rise by more than REPEAT
        (two jumps, read as one-off, over a page or so a step: two caches alike 3 steps apart read 10 MiB/step), where
        the largest rise is seen once (a one-off jump over steps that repeat), where the rises are all one kind (a
        steady rate: their median), or where dips cut a short run's window short (S1's clean Trainer steps, whose
        allocator's lumps repeat in their first ten). A long run's window of four tops of its last half (`late`: a
        sawtooth's, 0.5, 8, 0.5, 8 MiB, whose lower middle rise read a quarter of its rate) is read so too, and so is a
        window whose last rise is a sawtooth's climb begun again (`begun_again`): the four before it, twice over. Noise
        does not repeat so, and a step below the top (noise) says nothing of what was added."""
        found = _repeats(self.rises, WINDOW - 1 if self.late else WINDOW, self.reached)
        return found if found or not self.begun_again else _repeats(self.rises[:-1], WINDOW - 1, self.reached, TWICE)

    @property
    def begun_again(self) -> bool:
        """Whether the window's last rise is a sawtooth's climb begun again: the window passed over dips (its low
        steps), its first WINDOW - 1 rises repeat (`period`) twice over (every 2 steps: one of 3 would be seen once) and
        the last breaks that, a measured step at the top rising as its largest kind does, to within REPEAT. A sawtooth
        run to a step mid-climb rose small, big, small, big (its tops), then big (its climb past the last top), whose
        median read the climb's rate, not the tops'; `growth` reads the whole periods before that climb."""
        r = self.rises
        if len(r) < WINDOW or not self.passed_over or not all(self.reached):
            return False
        return abs(r[-1] - max(r[:-1])) <= REPEAT and not _repeats(r, WINDOW, self.reached) and bool(
            _repeats(r[:-1], WINDOW - 1, self.reached, TWICE))

    @property
    def passed_over(self) -> bool:
        """Whether the window passed over dips between its rises: its steps are not the run's last ones."""
        return any(d not in self.at for d in self.dips)

    @property
    def capped(self) -> str | None:
        """Why the median is held to the rate from the first of the window's rises of the median or more to the last
        (None: it is not). A step between them held the top to the byte (a leak every other step), or a block of
        steps between them did not rise (its highest step over all of its steps stayed at or below the top: a
        sawtooth of period 4 read in blocks of 2 rose 16 MiB over two steps every other block, 8 MiB/step for 4,
        RESULTS.md 5k); or the rises alternate big and small, each kind the same to within REPEAT, every small one a
        measured step past the top (a leak whose jump lands partly in the next step, a torch loop's allocator taking
        part of it a step later; a sawtooth whose flush falls below the top). A single step below the top (noise)
        says nothing of what was added, and rises that alternate by chance do not repeat, so neither caps it."""
        median = self.median
        if median <= 0:
            return None
        rose = [i for i, r in enumerate(self.rises) if r >= median]
        if any(self.held[rose[0] + 1:rose[-1]]):
            return "a step between held the top"
        if self.scale > 1 and any(r == 0 for r in self.rises[rose[0] + 1:rose[-1]]):
            return "a block between did not rise"
        n, small = len(self.rises), range(1, len(self.rises), 2)
        if n % 2 == 0 or rose != list(range(0, n, 2)) or not all(self.reached[i] and self.rises[i] > 0 for i in small):
            return None
        kinds = ([self.rises[i] for i in rose], [self.rises[i] for i in small])
        return "its rises alternate big and small, each repeating" if all(
            max(kind) - min(kind) <= REPEAT for kind in kinds) else None

    @property
    def median(self) -> float:
        """The median rise over the window, before `growth` caps it: each rise counts once (of an even number, the
        lower middle one), but the window's last steps back at the top after dips, holding it since its last rise,
        count for the steps they held it over (`spans`): a sawtooth's first climb, three rises of one step each, does
        not outweigh its tops held over the eight steps since. Counted so, the median is the rise at which more than
        half the count is passed (at exactly half, the higher: a held top's steps do not outweigh rises as many)."""
        if len(set(self.spans)) <= 1:
            return float(sorted(self.rises)[(len(self.rises) - 1) // 2])
        ordered, half, seen = sorted(zip(self.rises, self.spans)), sum(self.spans) / 2, 0
        return float(next(rise for rise, span in ordered if (seen := seen + span) > half))

    def rising(self, allowance: float) -> int:
        """How many of the window's steps rose by more than `allowance`."""
        return sum(r > allowance for r in self.rises)

    def to_json(self) -> dict[str, object]:
        return {"steps": [self.first, self.last], "rises": list(self.rises), "peak": self.peak, "dips": list(self.dips),
                "envelope": self.envelope, "scale": self.scale}


def _repeats(r: tuple[int, ...], least: int, reached: tuple[bool, ...], periods: tuple[int, ...] = PERIODS) -> int | None:
    """The period (of `periods`) after which the rises `r` repeat, by the rule Rises.period says; None where they do
    not or are fewer than `least`."""
    if len(r) < least or sorted(r)[(len(r) - 1) // 2] <= REPEAT or not all(reached):
        return None
    cuts = [b for a, b in pairwise(sorted(r)) if b - a > REPEAT]  # where one kind ends and the next begins
    kind = [sum(x >= cut for cut in cuts) for x in r]
    if not cuts or any(max(x for x, k in zip(r, kind) if k == j) - min(x for x, k in zip(r, kind) if k == j)
                       > REPEAT for j in set(kind)) or kind.count(len(cuts)) < 2:
        return None
    return next((period for period in periods if kind[period:] == kind[:-period]), None)


@dataclass(frozen=True)
class _Rise:
    """One judged step's rise of the running peak: from the last step kept before it (`since`), per step between."""

    step: int
    before: int  # the judged step before it
    since: int
    per_step: int
    kept: bool  # not passed over as a dip
    resets: bool = True  # the next rise is counted from this step (not one climbing back from a dip to the top)


def of(steps: Sequence[int], peaks: Sequence[int]) -> Rises | None:
    """The window's rises of a per-step series (steps in the order run); None with fewer than MIN_STEPS steps.

    The running peak is read twice, and the reading that grows more is judged: as measured, and with each
    spike of up to SPIKE_STEPS steps read at its neighbours' level (`without_spikes`). A spike lifts the running peak above a leak
    for as many steps as the leak needs to catch up, so the first reading alone passes such a leak as steady;
    growth that shows only in a sawtooth's high steps is in the first alone.
    """
    found = scales(steps, peaks, most=1)
    return found[0] if found else None


def scales(steps: Sequence[int], peaks: Sequence[int], most: int | None = None) -> tuple[Rises, ...]:
    """The window read at every scale the run is long enough for: blocks of 1, 2, 4, ... judged marks, counted back
    from the last judged one, each block's figure its highest mark's (so the running peak is the same), its step its
    last mark's; the window is the last WINDOW blocks' rises, per step. Blocks of one mark are the steps themselves
    (`of`); larger blocks are read while their window lies within the last half of the judged steps, so growth
    still going on in the run's second half is what they read, not a cache that filled in its first. A leak slower
    per step than a step's noise rises over a block of many steps by more than a block's noise does: judge/growth.py
    holds each scale to its own allowance. Empty with fewer than MIN_STEPS steps; `most`: the largest size read."""
    if len(peaks) < MIN_STEPS:
        return ()
    steps = run_order(steps)
    judged_steps, out, size = list(steps[WARMUP:-LAST]), [], 1
    whole = [int(p) for p in peaks]
    readings = [(series[WARMUP:-LAST], envelope) for series, envelope in ((whole, PEAK), (without_spikes(whole), DESPIKED))]
    measured = whole[WARMUP:-LAST]  # a step read on a spike's line held nothing: only a measured figure holds the top
    top = largest_block(len(peaks)) if most is None else min(most, largest_block(len(peaks)))
    while size <= top:
        views = [_view(*_blocks(judged_steps, judged, [a == b for a, b in zip(judged, measured)], size), envelope, size)
                 for judged, envelope in readings]
        whole = _cycle(judged_steps, measured, size, judged_steps[0])
        views = [replace(v, cycle=_cycle(judged_steps, measured, size, views[0].tops_from), whole=whole) for v in views]
        out.append(max(views, key=lambda v: v.growth))  # a tie: as measured, listed first
        size *= 2
    return tuple(out)


def _cycle(judged_steps: list[int], measured: list[int], size: int, start: int) -> cycles.Cycle | None:
    """Where the measured judged steps (in blocks of `size`) from step `start` on, the stretch the window's tops are
    taken from, repeat every few (cycle.of): a spike read on its neighbours' line is not what the steps repeat."""
    steps, values, _ = _blocks(judged_steps, measured, [True] * len(measured), size)
    kept = [k for k, step in enumerate(steps) if step >= start]
    return cycles.of([steps[k] for k in kept], [values[k] for k in kept])


def largest_block(marks: int) -> int:
    """The largest block size `scales` reads in a run of `marks` marked steps (1 below MIN_STEPS): the largest whose
    last WINDOW blocks lie within the last half of the judged steps."""
    judged, size = marks - WARMUP - LAST, 1
    while judged >= 2 * WINDOW * size * 2:
        size *= 2
    return size


def _blocks(judged_steps: list[int], judged: list[int], real: list[bool],
            size: int) -> tuple[list[int], list[int], list[bool]]:
    """The judged marks in blocks of `size`, counted back from the last (marks left over at the start dropped): each
    block's highest figure, at the step it was measured (the first of equal ones: where it was reached), so a rise
    between blocks is divided by the steps between their tops (a leak under an evaluation every 20 steps, read in
    blocks of 16, rises from one evaluation to the next over 20 steps, not over the 16 or 32 between the blocks'
    ends; a leak every 3rd step, read in blocks of 8, from one jump to another, not from the block's last step)."""
    if size == 1:
        return judged_steps, judged, real
    starts = range(len(judged) - size * (len(judged) // size), len(judged), size)
    tops = [_top(judged, real, range(k, k + size)) for k in starts]
    return [judged_steps[i] for i in tops], [judged[i] for i in tops], [real[i] for i in tops]


def _top(judged: list[int], real: list[bool], block: range) -> int:
    """The block's highest mark: the first of equal ones, where the level was reached and the steps after it held it;
    where one of them was read on a spike's line (at its neighbour's level), the last, as before that line."""
    high = max(judged[i] for i in block)
    tied = [i for i in block if judged[i] == high]
    return tied[0] if all(real[i] for i in tied) else tied[-1]


def in_order(steps: Sequence[int]) -> bool:
    """Whether the step numbers rise from mark to mark: a rise is then per step between them (a loop that marks every
    10th step rises over 10). Numbers that repeat or go back (restarted each epoch) are read in the order run."""
    return all(b > a for a, b in pairwise(steps))


def stride(steps: Sequence[int]) -> int:
    """Steps per mark where the numbers go back: the median of the rises from one mark to the next (1 where none
    rose). A loop marking every 10th step by its place in the epoch (step(0), step(10), ..., step(90), step(0)) spans
    10 steps a mark; read as one, its growth read 10 times its rate (0.15 MiB/step read 1.52)."""
    up = sorted(b - a for a, b in pairwise(steps) if b > a)
    return up[(len(up) - 1) // 2] if up else 1


def run_order(steps: Sequence[int]) -> Sequence[int]:
    """The numbers the rule reads a run's marks at: its own where they rise from mark to mark, else each mark's place
    in the order run times `stride` (the k-th mark at k * stride)."""
    if in_order(steps):
        return steps
    every = stride(steps)
    return range(every, every * len(steps) + 1, every)


def without_spikes(peaks: Sequence[int]) -> list[int]:
    """The series with each spike of up to SPIKE_STEPS steps (steps each more than SPIKE above both steps around them:
    an evaluation's buffers, a scratch tensor freed after a step or two) read on the line between those two steps,
    no steeper than the steps either side of it rise: never above them, so no rise is made up. A spike that leaves
    memory behind (an evaluation that keeps its data set) rises into the step after it, as one jump, where the line
    would spread that jump over the spike's steps and read it as growth on each. A one-step spike among steps that
    rise alike reads as its neighbours' mean. A buffer's tops, lowered so before each fall, that repeat to within
    REPEAT lower the run's last climb too, whose fall the run did not see (`_last_climb_at_tops`)."""
    values = [int(p) for p in peaks]
    out, tops = list(values), []
    k = 1
    while k < len(values) - 1:
        length = next((n for n in range(1, SPIKE_STEPS + 1) if k + n < len(values)
                       and min(values[k:k + n]) - max(values[k - 1], values[k + n]) > SPIKE), 0)
        if not length:
            k += 1
            continue
        before, rate = values[k - 1], _spike_rate(values, out, k, length)
        for j in range(length):
            out[k + j] = before + rate * (j + 1) // (length + 1)
        if _climbs_on(values, k, length):
            tops.append((before, max(values[k:k + length])))
        k += length
    return _last_climb_at_tops(values, out, tops)


def _climbs_on(values: list[int], k: int, length: int) -> bool:
    """Whether the spike at k (of `length` steps) climbs on as the step into it climbed: its rises and the one into
    the step before it, two or more, alike (`_alike`). No spike off its neighbours' line does (it rises into its first
    step by more than twice what the line rises over a step, and SPIKE more): this is a climb's top that the run fell
    from, a buffer freed."""
    rises = [values[j] - values[j - 1] for j in range(max(1, k - 1), k + length)]
    return len(rises) >= 2 and _alike(rises)


def _last_climb_at_tops(values: list[int], out: list[int], tops: list[tuple[int, int]]) -> list[int]:
    """`out` with the run's last climb read at the step its buffer's tops climbed from, where the run read two tops
    or more on their line (`tops`: each one's step before it and highest step), all alike to within REPEAT (a buffer
    that keeps nothing), and the last climb passes none of them: wherever the run saw the fall after a top, the top
    was lowered onto the fall's line, and the run's last climb, whose fall lies past its end, is the same top. Read as
    measured, it rose past the tops lowered before it: a buffer of 16 MiB a step freed every 6th step, 15 steps, read
    2.29 MiB/step of growth (RESULTS.md 5k). Tops that rise (flushes that keep: a leak) are read as before, their
    lowered line rising with them."""
    start = len(values) - 1
    while start > 0 and values[start] > values[start - 1]:
        start -= 1
    bases, highs = [base for base, _ in tops], [top for _, top in tops]
    if len(tops) < 2 or max(bases) - min(bases) > REPEAT or max(highs) - min(highs) > REPEAT \
            or max(values[start:]) > max(highs):
        return out
    return out[:start] + [min(v, max(bases)) for v in out[start:]]


def _spike_rate(values: list[int], read: list[int], k: int, length: int) -> int:
    """How far the spike at k (of `length` steps) rises over its length + 1 steps, from the step before it: the line
    to the step after it, no steeper than the rise into the step before it (as read so far, spikes at their line) or
    out of the step after it, where those steps are in the series. A line that falls is kept."""
    line = values[k + length] - values[k - 1]
    around = [read[k - 1] - read[k - 2]] if k >= 2 else []
    around += [values[k + length + 1] - values[k + length]] if k + length + 1 < len(values) else []
    if line <= 0 or not around:
        return line
    return min(line, max(0, min(around)) * (length + 1))


def _view(judged_steps: list[int], judged: list[int], real: list[bool], envelope: str, scale: int = 1) -> Rises:
    """One reading of the judged steps (or blocks): the running peak's rises, dips passed over, the window. `real`:
    which figures were measured (not read on a spike's line)."""
    running = list(accumulate(judged, max))  # in one pass: a run of 30,000 steps is read in well under a second
    dips = [before - p > DIP for p, before in zip(judged[1:], running)]
    freed = _freed(dips)
    if freed:  # memory freed for good: the steps after it are read on their own running peak
        return _view(judged_steps[-freed:], judged[-freed:], real[-freed:], envelope, scale)
    reached = [measured and p >= before for p, before, measured in zip(judged[1:], running, real[1:])]
    held = [r and p == before for r, p, before in zip(reached, judged[1:], running)]
    teeth = _freed_climbs(judged, running)
    return _window(judged_steps, _rises(judged_steps, running, dips, teeth), running, held, reached, envelope, scale,
                   _tooth_tops(judged_steps, judged, teeth))


def _freed_climbs(judged: list[int], running: list[int]) -> list[str]:
    """Each judged step's part (after the first) in a tooth: a climb past the running peak of three steps or more,
    each rising alike (`_alike`: a buffer growing by the same each step), that the run then fell back from by more
    than SPIKE and more than half of it before passing its top again, and climbed again as it had (`_tooth`): memory
    freed, not kept. CLIMB for its steps before its top, TOP for its top, "" for any other step. A run begun on a
    tooth read its climb as growth still going on (a buffer freed every 8th step read 16 MiB/step for 0.5,
    RESULTS.md 5k)."""
    out = [""] * (len(judged) - 1)
    i = 1
    while i < len(judged):
        if judged[i] <= running[i - 1]:
            i += 1
            continue
        end = i
        while end + 1 < len(judged) and judged[end + 1] > running[end]:
            end += 1
        if _tooth(judged, i, end):
            out[i - 1:end] = [CLIMB] * (end - i + 1)
            out[end - 1] = TOP
        i = end + 1
    return out


def _tooth_tops(judged_steps: list[int], judged: list[int], teeth: list[str]) -> tuple[int, ...]:
    """The steps of a run's teeth's tops, from its first tooth's on: each step that the next falls from by more than
    SPIKE and half that tooth's climb (a later tooth passes the top by a step or two, no tooth of its own); () where
    the run has no tooth."""
    if TOP not in teeth:
        return ()
    start, top = teeth.index(CLIMB), teeth.index(TOP) + 1  # judged indices: the climb's first step less one, its top
    fall = max(SPIKE, (judged[top] - judged[start]) / 2)
    return tuple(judged_steps[k] for k in range(top, len(judged) - 1) if judged[k] - judged[k + 1] > fall)


def _tooth(judged: list[int], start: int, end: int) -> bool:
    """Whether the climb of judged[start..end] past the running peak is a tooth (_freed_climbs): three rises or more
    alike (`_alike`; its top's rise aside), then, before the top is passed again, a fall of more than SPIKE and half
    of it, and the step after the fall's lowest climbing as it did (a top read on a spike's line falls over two
    steps). S1's Trainer steps 8-9 fall 50 MiB below a leak's climb and come back in one jump: that leak's climb is
    growth."""
    rises = [b - a for a, b in pairwise(judged[start - 1:end + 1])]
    if len(rises) > 3 and _alike(rises[:-1]):
        rises = rises[:-1]  # the top's step may hold more: what the flush keeps, a last larger batch
    if len(rises) < 3 or not _alike(rises):
        return False
    base, top = judged[start - 1], judged[end]
    for k in range(end + 1, len(judged) - 1):
        if judged[k] > top:
            return False
        if top - judged[k] > max(SPIKE, (top - base) / 2):
            while k + 2 < len(judged) and judged[k + 1] < judged[k]:
                k += 1
            return _alike(rises + [judged[k + 1] - judged[k]])
    return False


def _alike(rises: list[int]) -> bool:
    """Whether a climb's rises are alike: within REPEAT of each other, or of TOOTH_NOISE of their mean (a buffer of
    16 MiB a step under 0.5 MiB of noise rose 15.5 .. 16.5 MiB, no tooth to within REPEAT: its climb read as growth,
    a false FAIL in most 20-step runs, RESULTS.md 5k). Noise climbs no three steps so alike and then falls and
    climbs again as they did: the noisy series of 5h read the same verdicts."""
    mean = sum(rises) / len(rises)
    return mean > 0 and max(rises) - min(rises) <= max(REPEAT, TOOTH_NOISE * mean)


def _freed(dips: list[bool]) -> int:
    """How many judged steps the run ends with that all lie more than DIP below the running peak, where they are more
    than WINDOW and more than any earlier stretch of dips (0 otherwise): memory freed for good (a cache cleared, a
    model dropped), not a sawtooth's low step or the steps between evaluations, which return to the top as often. Read
    against the peak before it, a leak after it never reached that peak (read as steady) and the growth before it read
    as still going on."""
    stretches, run = [0], 0
    for dip in dips:
        run = run + 1 if dip else 0
        if dip:
            stretches[-1] = run
        elif stretches[-1]:
            stretches.append(0)
    if not dips or not dips[-1] or run <= WINDOW or run <= max(stretches[:-1], default=0):
        return 0
    return run


def _rises(judged_steps: list[int], envelope: list[int], passed: list[bool], teeth: list[str]) -> list[_Rise]:
    """Each judged step's rise of `envelope` (after the first), over the steps since the last one kept. A tooth
    (`_freed_climbs`) rises from the tooth's top before it to its own top, its climb's other steps passed over; the
    first one, after no tooth's top, only sets the level."""
    out, since, level, toothed = [], 0, envelope[0], False
    for i, step in enumerate(judged_steps[1:], start=1):
        part = teeth[i - 1]
        kept = not passed[i - 1] and part != CLIMB and (part != TOP or toothed)
        rise = max(0, envelope[i] - level)
        per_step = rise // (step - judged_steps[since]) if kept else 0
        # one climbing out of a dip is not the top
        resets = part == TOP or kept and bool(rise or i == 1 or not passed[i - 2])
        out.append(_Rise(step, judged_steps[i - 1], judged_steps[since], per_step, kept, resets))
        if resets:
            since, level = i, envelope[i]
        toothed = toothed or part == TOP
    return out


def _window(judged_steps: list[int], rises: list[_Rise], running: list[int], held: list[bool], reached: list[bool],
            envelope: str, scale: int, tops: tuple[int, ...] = ()) -> Rises:
    """The last WINDOW kept steps' rises, among the last half where the run holds LONG judged marks or more; where
    fewer than MIN_TOP of those were kept, the last WINDOW steps, a step passed over counting as no rise. Its dips:
    the steps passed over from the window's first rise's start on. A top reached long before the end (noisy steps
    that reached it early in a run of 100 and all fell below it since) is not growth still going on: read as the
    window, its rises were the run's first steps'; the last half keeps a sawtooth's or an evaluation's tops (every
    5th or 20th step). In a shorter run the last half holds too few of a noisy leak's tops (RESULTS.md 5h)."""
    recent = len(rises) // 2 if len(judged_steps) * scale >= LONG else 0
    kept = [i for i, r in enumerate(rises) if r.kept and i >= recent]
    at = kept[-WINDOW:] if len(kept) >= MIN_TOP else list(range(len(rises)))[-WINDOW:]
    head = at[0]
    if rises[head].kept:
        while head > 0 and not rises[head - 1].kept:  # the dips its rise spans
            head -= 1
    first = rises[at[0]].since if rises[at[0]].kept else rises[at[0]].before
    passed = tuple(r.step for r in rises[head:] if not r.kept)
    return Rises(first, judged_steps[-1], tuple(rises[i].per_step for i in at), running[-1], passed, envelope, scale,
                 tuple(rises[i].step for i in at), tuple(running[i + 1] for i in at), tuple(held[i] for i in at),
                 tuple(reached[i] for i in at), recent > 0,
                 _spans([rises[i] for i in at]) if len(kept) >= MIN_TOP else (), () if len(kept) >= MIN_TOP else tops,
                 judged_steps[recent])


def _spans(window: list[_Rise]) -> tuple[int, ...]:
    """How many steps each of the window's rises counts for: one, but the steps after the window's last rise, which
    held the top over the steps since the one before them (dips passed over), count for those steps."""
    last = max((k for k, r in enumerate(window) if r.resets), default=-1)
    return tuple(1 if k <= last else r.step - (window[k - 1].step if k else r.since) for k, r in enumerate(window))


def growth(series: Sequence[int | None], steps: Sequence[int] | None = None) -> float | None:
    """The growth per step of one metric's per-step peaks at their step numbers (None: numbered in order); None where
    a step lacks it or the run is too short to judge."""
    if any(p is None for p in series):
        return None
    found = of(range(1, len(series) + 1) if steps is None else steps, [int(p) for p in series])
    return None if found is None else found.growth
