"""The largest batch that fits a memory budget, found by the core's boundary search over real runs.

S5's write-up picks "32 -> 16" by hand; this finds the edge with a few
measured runs instead. Peak memory is assumed to grow with the batch size
(true of activations), so the fitting sizes form a prefix of [lo, hi]. With
no prediction to start from, the search starts in the middle of the range:
gpu_budget.search.boundary gallops from there and bisects the bracket, at most 9
runs for the 33 sizes of 8..40, 2 when the edge is the middle size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gpu_budget.search.boundary import largest_fitting


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
    """The largest batch in [lo, hi] whose measure_fn(batch) peak is <= budget_bytes.

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

    sizes = range(lo, hi + 1)
    found = largest_fitting(sizes, fits, hint=len(sizes) // 2)
    result.batch_size = sizes[found] if found >= 0 else None
    return result
