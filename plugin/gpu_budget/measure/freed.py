"""A run too short to tell a buffer freed every few steps from growth: its steps climb, fall, and climb again alike.

A data loader's or a metrics buffer freed every p steps climbs for p - 1 steps
and falls back. A run that sees one such fall and then climbs again as it had
ends in a climb no rule can tell from a leak begun after memory was freed (a
cache cleared): over its last steps the two series are the same, step for step,
and the teeth that set them apart lie past the run's end (RESULTS.md 5k: its
false FAILs were runs of 10 or 15 steps read so, the climb as growth). Where
the growth read is that climb's, and the run holds fewer marks than
judge/growth.py's tops_run asks of a buffer freed that often, the row cannot
say which it is, and says so instead of failing on the climb as growth.

A fall here is the rule's own dip (rises.DIP), at least one step's climb deep
below the climb (a top that held more aside: a scratch tensor over a leak
falls back onto the leak's line, not below it, and is no buffer's fall),
and the climb after it has not passed the top it fell from by more than a
step's climb (a buffer refills to its top and what a flush keeps; a leak begun
after a free passes it, and is read as growth from there);
the climb is CLIMB_RISES rises or more, before and after the fall together,
alike (within rises.REPEAT, or rises.TOOTH_NOISE of their mean): noise does
not climb so alike across a fall (RESULTS.md 5h's noisy leaks read the same
verdicts). A leak that comes back from a dip in one jump (S1's Trainer steps
8-9) does not climb as it had, and a reading below the climb (a buffer's tops
read at what its flushes keep) is the rule's own: neither is held back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpu_budget.measure import rises

CLIMB_RISES = 3  # rises alike, before and after the fall together: fewer, and a noisy leak's steps climb so by chance


@dataclass(frozen=True)
class Freed:
    """A climb the run fell back from and climbed again as it had."""

    fell_at: int  # the step the run fell at (memory freed)
    fall: int  # bytes it fell by
    climb: float  # the climb's rise, bytes per step
    period: int  # the least marks from one fall to the next a buffer climbing so for as long needs


def of(steps: Sequence[int], peaks: Sequence[int], growth: float) -> Freed | None:
    """The climb-fall-climb the run's measured marks (the warm-up's too, up to the last judged) end in, where the
    growth read (bytes per step) is that climb's; None where they end otherwise."""
    numbers = list(rises.run_order(steps))
    v = [int(p) for p in peaks[:len(peaks) - rises.LAST]]
    k = len(v) - 1
    while k > 0 and v[k] > v[k - 1]:
        k -= 1  # k: where the run's last climb starts (or its last step, where that fell)
    if k < 2 or v[k - 1] - v[k] <= rises.DIP:
        return None
    after = _climb(v, numbers, k + 1, len(v))
    foot = k - 1
    while foot > 0 and v[foot] > v[foot - 1]:
        foot -= 1
    before = _climb(v, numbers, foot + 1, k)
    climb = before + after
    if not before or len(climb) < CLIMB_RISES or not _alike(climb):
        return None
    mean = sum(climb) / len(climb)
    shoulder = v[k - 1] if len(before) == k - 1 - foot else v[k - 2]  # below a top that held more (_climb)
    if shoulder - v[k] < mean or growth < mean - max(rises.REPEAT, rises.TOOTH_NOISE * mean):
        return None
    if max(v[k:]) > v[k - 1] + mean + rises.REPEAT:  # climbed past the top it fell from: growth, whatever frees
        return None
    return Freed(numbers[k], v[k - 1] - v[k], mean, max(k - 1 - foot, len(v) - 1 - k) + 1)


def _climb(v: list[int], numbers: list[int], start: int, end: int) -> list[float]:
    """The rises per step into marks start..end - 1; the last left out where it is the largest of two or more (a
    top's step may hold more: a flush at the step's end, what it keeps)."""
    out = [(v[j] - v[j - 1]) / (numbers[j] - numbers[j - 1]) for j in range(start, end)]
    return out[:-1] if len(out) >= 2 and out[-1] > max(out[:-1]) else out


def _alike(climb: list[float]) -> bool:
    """Rises alike as a tooth's are (rises._alike): within REPEAT of each other, or TOOTH_NOISE of their mean."""
    mean = sum(climb) / len(climb)
    return mean > 0 and max(climb) - min(climb) <= max(rises.REPEAT, rises.TOOTH_NOISE * mean)
