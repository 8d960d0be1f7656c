"""The largest batch that fits a memory budget, found by bisection over real runs.

S5's write-up picks "32 -> 16" by hand; this finds the edge with O(log n)
measured runs instead. Peak memory is assumed to grow with the batch size
(true of activations), so the fitting sizes form a prefix of [lo, hi].
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class BatchSearch:
    """batch_size: the largest that fit (None: not even `lo`); peaks: every run made, by batch size."""

    batch_size: int | None
    budget_bytes: int
    peaks: dict[int, int | None] = field(default_factory=dict)

    @property
    def runs(self) -> int:
        return len(self.peaks)


def largest_batch_within(budget_bytes: int, measure_fn: Callable[[int], int | None],
                         lo: int, hi: int) -> BatchSearch:
    """Bisect [lo, hi] for the largest batch whose measure_fn(batch) peak is <= budget_bytes.

    measure_fn runs the real thing and returns its peak in bytes; None (a run
    that crashed or was killed) counts as not fitting. Each size runs once.
    """
    if not 1 <= lo <= hi:
        raise ValueError(f"need 1 <= lo <= hi, got lo={lo}, hi={hi}")
    result = BatchSearch(None, budget_bytes)

    def fits(batch: int) -> bool:
        if batch not in result.peaks:
            result.peaks[batch] = measure_fn(batch)
        peak = result.peaks[batch]
        return peak is not None and peak <= budget_bytes

    if not fits(lo):
        return result
    if fits(hi):
        result.batch_size = hi
        return result
    good, bad = lo, hi  # invariant: good fits, bad does not
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if fits(mid) else (good, mid)
    result.batch_size = good
    return result
