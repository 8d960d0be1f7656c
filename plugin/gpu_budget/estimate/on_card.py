"""`estimate --cuda --card NAME`: whether each estimate fits the memory card= would leave on that card.

The cap limits reserved memory, but the caching allocator frees its cache and
retries before it raises, so the answer is on allocated memory, the figure
the estimator models best; what it does not model is said beside it, so a
"fits" is never read as a measurement.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpu_budget.estimate.card_room import CardRoom
from gpu_budget.estimate.rows import EstimateRow
from gpu_budget.units import format_size


def verdict(row: EstimateRow, room: CardRoom) -> str:
    """One case against the card: whether its allocated peak fits under the cap, by how much, and its reserved peak
    (the allocator's cache, which fragmentation sets: estimated less exactly) beside it."""
    allocated = row.allocated_peak if row.allocated_peak is not None else row.estimate
    spare = room.limit - allocated
    said = f"fits with {format_size(spare)} to spare" if spare >= 0 else f"does not fit: {format_size(-spare)} over"
    reserved = "" if row.reserved_peak is None else (
        f"; the estimated reserved peak, {format_size(row.reserved_peak)}, is "
        f"{'within' if row.reserved_peak <= room.limit else 'over'} it")
    return f"{row.label}: the estimated allocated peak, {format_size(allocated)}, {said}{reserved}"


def card_lines(rows: Sequence[EstimateRow], room: CardRoom) -> str:
    """The verdict of each case, after what the limit is and before what the answer does not cover."""
    head = (f"On {room.card.label}, card= would cap the caching allocator at {format_size(room.limit)}: the card "
            f"less {room.context_words()}.")
    tail = ("Not estimated: the cache at the run's own peak (the allocator frees it and retries before it runs out, "
            "so allocated memory is what must fit, but fragmentation can still fail a run close to the limit, and the "
            "reserved figure is the estimator's less exact one); cuDNN's convolution workspaces; bitsandbytes' int8 "
            "outlier columns; memory taken outside torch's allocator. The estimate's error against measured runs: "
            "docs/estimator-cuda.md.")
    return "\n".join([head, *(verdict(r, room) for r in rows), tail])
