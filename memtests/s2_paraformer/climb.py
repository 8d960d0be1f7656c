"""Whether GPU reserved memory climbs over a run of FunASR's length-sorted batches, read from its per-step series.

FunASR's sampler sorts each buffer of sort_size shuffled clips by length, so a
run is a series of cycles, short batches rising to long ones (a cycle ends
where the longest clip drops: a new buffer or a new epoch). Reserved memory
over the last 10% of steps against the first steady 10% (the steps after the
growth rule's two warm-up steps) is what the issue asks for, but it compares a
cycle's long batches with its short ones. So the verdict compares like with
like: the highest reserved of the last cycle against the first's. Reserved
climbs where that rise passes the rise of allocated between them by more than
rises.DIP (1 MiB, the growth rule's own resolution): memory the caching
allocator keeps that the batches did not need.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gpu_budget.measure.rises import DIP, WARMUP

MiB = 2**20
SHARE = 0.1  # the early and the late windows: a tenth of the steps each


@dataclass(frozen=True)
class Cycle:
    """One run of batches whose longest clip does not fall: its steps (1-based, inclusive) and highest figures."""

    first: int
    last: int
    allocated: int
    reserved: int


@dataclass(frozen=True)
class Reading:
    """A run's reserved and allocated memory: the early and late windows' highest, and each cycle's."""

    steps: int
    early: tuple[int, int]  # steps (inclusive) of the first steady tenth
    late: tuple[int, int]  # and of the last tenth
    allocated_early: int
    allocated_late: int
    reserved_early: int
    reserved_late: int
    cycles: tuple[Cycle, ...]

    @property
    def kept(self) -> int:
        """How much more the last cycle reserved than the first, beyond the rise of its allocated peak (bytes)."""
        first, last = self.cycles[0], self.cycles[-1]
        return (last.reserved - first.reserved) - max(0, last.allocated - first.allocated)

    @property
    def climbs(self) -> bool:
        return self.kept > DIP

    def describe(self) -> str:
        first, last = self.cycles[0], self.cycles[-1]
        return (f"reserved over the last tenth (steps {self.late[0]}-{self.late[1]}) "
                f"{self.reserved_late / MiB:.1f} MiB against {self.reserved_early / MiB:.1f} MiB over the first steady "
                f"tenth (steps {self.early[0]}-{self.early[1]}), allocated {self.allocated_late / MiB:.1f} against "
                f"{self.allocated_early / MiB:.1f} MiB; like with like, the highest of the last of its "
                f"{len(self.cycles)} length cycles (steps {last.first}-{last.last}): reserved {last.reserved / MiB:.1f}"
                f" / allocated {last.allocated / MiB:.1f} MiB against the first's (steps {first.first}-{first.last}) "
                f"{first.reserved / MiB:.1f} / {first.allocated / MiB:.1f} MiB: reserved "
                + (f"climbs, {self.kept / MiB:.1f} MiB kept beyond what allocated rose" if self.climbs else
                   f"does not climb beyond allocated (by {self.kept / MiB:.1f} MiB, within {DIP / MiB:.0f} MiB)"))


def cycles_of(longest: Sequence[float]) -> list[tuple[int, int]]:
    """The steps (1-based, inclusive) of each run of batches whose longest clip does not fall."""
    starts = [0] + [i for i in range(1, len(longest)) if longest[i] < longest[i - 1]]
    return [(start + 1, end) for start, end in zip(starts, [*starts[1:], len(longest)])]


def read(allocated: Sequence[int], reserved: Sequence[int], longest: Sequence[float]) -> Reading:
    """The reading of per-step allocated and reserved peaks (bytes) and each step's longest clip, in step order."""
    n = len(allocated)
    if not n == len(reserved) == len(longest) or n < WARMUP + 2:
        raise ValueError(f"per-step series of {len(allocated)}, {len(reserved)} and {len(longest)} steps: expected "
                         f"one length, at least {WARMUP + 2}")
    tenth = max(1, math.ceil(SHARE * n))
    early = (WARMUP + 1, min(n, WARMUP + tenth))
    late = (n - tenth + 1, n)

    def top(series: Sequence[int], steps: tuple[int, int]) -> int:
        return max(series[steps[0] - 1:steps[1]])

    return Reading(n, early, late, top(allocated, early), top(allocated, late), top(reserved, early),
                   top(reserved, late),
                   tuple(Cycle(a, b, top(allocated, (a, b)), top(reserved, (a, b))) for a, b in cycles_of(longest)))
