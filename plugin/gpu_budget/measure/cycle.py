"""Growth over a whole period: where a run's measured steps repeat every few steps, the most they rose over one.

A buffer freed every p steps (gradient accumulation, a metrics buffer flushed
every p steps, a cache emptied) makes a run's steps a sawtooth, and what each
flush keeps is its growth, p steps apart. The window's median rise
(measure/rises.py) reads each rising step's whole rise as growth per step, and
its periodic readings compare rises to within a few pages and need steps that
reach the top, which a MiB of noise defeats: such teeth read their climb, not
what they keep. Steps one whole period apart differ by what was kept and by
noise alone, wherever the period starts, so where the measured steps repeat at
a lag far more closely than from one step to the next, growth per step is no
more than their largest rise over that lag, per step: that largest rise carries
the run's own noise, so a leak is not read below its rate by it. And no less than
their smallest, where the run holds FLOOR_PERIODS lags: every period kept at
least that much, so a leak every p-th step (a list appended to at each epoch's
end, epochs of 6 steps), which rises on fewer than 3 of the window's 5 steps and
reads as one-off jumps there, reads its rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

CLOSER = 4  # a lag repeats where its rises spread less than a quarter of the step-to-step rises' spread
FLOOR_PERIODS = 4  # whole lags a floor needs: two caches 3 steps apart rise alike over every lag of 3, and the
# catalogue's leak every other step over 7 judged steps (3 lags) is read as one-off jumps, as its report measured
LONGEST = 16  # marks: a longer period is read in blocks of steps (rises.scales), a block of 8 holding 128 in 16


@dataclass(frozen=True)
class Cycle:
    """A lag at which a run's measured steps repeat, and the most they rose over it."""

    marks: int  # the lag, in marks (judged steps, or blocks of them)
    most: float  # the largest rise over the lag, bytes per step (0 where none rose)
    least: float = 0.0  # the smallest rise over the lag, bytes per step (0 where any did not rise)


def of(steps: Sequence[int], values: Sequence[int]) -> Cycle | None:
    """The shortest lag of 2 to LONGEST marks at which the measured `values` (at step numbers `steps`) repeat: their
    rises over it, more than the lag (each phase seen, and one again: over a stretch of two lags every pair spans its
    one fall, so a buffer freed every 8th step keeping one climb would repeat at 7), spread less than 1/CLOSER as
    much as their rises from one mark to the next. Noise alone spreads about alike at every lag, and a leak without a
    period rises alike over every lag, so neither repeats so (a steady run, all rises equal, has no lag either); a
    sawtooth's climbs and falls spread its rises from one step to the next by its whole tooth, and over its period by
    its noise. None where no lag repeats."""
    n = len(values)
    one = [b - a for a, b in pairwise(values)]
    if len(one) < 2:
        return None
    each = max(one) - min(one)
    for lag in range(2, min((n - 1) // 2, LONGEST) + 1):  # linear in the run's length: 30,000 steps in well under a second
        rises = [values[k] - values[k - lag] for k in range(lag, n)]
        if CLOSER * (max(rises) - min(rises)) < each:
            per_step = [rise / (steps[k + lag] - steps[k]) for k, rise in enumerate(rises)]
            least = max(0.0, min(per_step)) if n - 1 >= FLOOR_PERIODS * lag else 0.0
            return Cycle(lag, max(0.0, max(per_step)), least)
    return None
