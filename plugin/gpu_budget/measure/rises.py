"""A run's growth per step: the median rise of its running peak over the last judged steps.

One figure per metric, computed once here and reported as the row's growth
(`growth["<metric>_per_step"]`) and judged by judge/growth.py, so the JSON
never holds two growths for one series.

Steps left out: the first two (warm-up) and the last. The first allocates the
optimizer state, so every later step peaks above it; the second is where host
RAM's allocator settles (S1's Trainer script: about +1 MiB from step 2 to 3).
A Trainer's step phase also holds the loading of the next step's batch
(measure/hf_trainer.py), which its last step has none of.

The figure: the running peak over the judged steps, its rise at each step,
and the median of the last WINDOW rises (of an even number, the lower middle
one). The median reads growth that is still going on at the end of the run,
whenever it began (a leak that starts late is read at its own rate), and is
blind to up to two one-off jumps in the window (a cache made once, two caches,
lazy optimizer state): growth must show in at least 3 of the last 5 judged
steps. A step that peaks more than DIP below the running peak (a sawtooth's low
step, a step without an evaluation's buffers, S1's Trainer steps 8-9) shows
nothing of the top and is passed over, so the window holds the last five steps
that reached it; where fewer than four did, it holds the last five steps, a
dip counting as no rise (a window of four or five still ignores two jumps). What the rule cannot tell apart in a short run (a
cache still filling from a leak, a leak that adds on fewer than 3 of 5 steps
from one-off jumps, inputs that grow each step from a leak) is said in
docs/declaring.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WARMUP = 2  # optimizer steps left out first: the optimizer state's step, then the allocator's settling step
LAST = 1  # and last: a Trainer's last step loads no next batch
WINDOW = 5  # the rises judged: the last five; their median sees growth in 3 of them, and ignores 2 jumps
MIN_STEPS = WARMUP + WINDOW + 1 + LAST  # 9: five rises need six judged steps
MIN_TOP = 4  # steps that reached the running peak: fewer, and the window is the last WINDOW steps, dips as no rise
DIP = 2**20  # a step this far below the running peak is a dip: it shows nothing of the top


@dataclass(frozen=True)
class Rises:
    """The running peak's rise at each step of the window (bytes), the window's steps, and the peak it ends at."""

    first: int  # the step the window's first rise is counted from
    last: int  # the last step judged
    rises: tuple[int, ...]  # one per step of the window (after `first`, up to `last`), in order
    peak: int  # the running peak at `last`: where a projection starts
    dips: tuple[int, ...] = ()  # the judged steps passed over: more than DIP below the running peak

    @property
    def growth(self) -> float:
        """Bytes per step: the median rise over the window (of an even number, the lower middle one)."""
        return float(sorted(self.rises)[(len(self.rises) - 1) // 2])

    def rising(self, allowance: float) -> int:
        """How many of the window's steps rose by more than `allowance`."""
        return sum(r > allowance for r in self.rises)

    def to_json(self) -> dict[str, object]:
        return {"steps": [self.first, self.last], "rises": list(self.rises), "peak": self.peak, "dips": list(self.dips)}


def of(steps: Sequence[int], peaks: Sequence[int]) -> Rises | None:
    """The window's rises of a per-step series (steps in the order run); None with fewer than MIN_STEPS steps."""
    if len(peaks) < MIN_STEPS:
        return None
    judged_steps, judged = steps[WARMUP:-LAST], peaks[WARMUP:-LAST]
    running = [max(judged[: i + 1]) for i in range(len(judged))]
    rises = [(step, max(0, peak - before)) for step, peak, before in zip(judged_steps[1:], judged[1:], running)]
    dips = tuple(step for step, peak, before in zip(judged_steps[1:], judged[1:], running) if before - peak > DIP)
    top = [(step, rise) for step, rise in rises if step not in dips]
    window = top[-WINDOW:] if len(top) >= MIN_TOP else rises[-WINDOW:]
    first = judged_steps[judged_steps.index(window[0][0]) - 1]
    return Rises(first, judged_steps[-1], tuple(rise for _, rise in window), running[-1],
                 tuple(d for d in dips if d > first))


def growth(series: Sequence[int | None]) -> float | None:
    """The growth per step of one metric's per-step peaks (steps numbered in order); None where a step lacks it or
    the run is too short to judge."""
    if any(p is None for p in series):
        return None
    found = of(range(1, len(series) + 1), [int(p) for p in series])
    return None if found is None else found.growth
