"""The largest value that fits a budget, found with few real runs (each one a measured child).

Memory is assumed to grow along the values (activations grow with the batch),
so the values that fit form a prefix. Exploration (explore.py) starts from the
estimator's predicted edge; a search with no prediction starts at one end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

V = TypeVar("V")


def largest_fitting(values: Sequence[V], fits: Callable[[V], bool], hint: int = 0) -> int:
    """Index of the largest of `values` that fits (-1: none), assuming the fitting values form a prefix.

    Gallops from `hint`, the predicted index, towards the edge (steps of 1, 1,
    2, 4, ...), then bisects the bracket: a right prediction costs two calls of
    `fits` (it fits, the next does not), one off costs two or three. `fits`
    runs the real thing; callers cache it if a value may be asked twice.
    """
    n = len(values)
    if n == 0:
        raise ValueError("largest_fitting: no values to search")
    first = min(max(hint, 0), n - 1)
    steps = _gallop()
    if fits(values[first]):
        good, step = first, next(steps)
        while good + step < n and fits(values[good + step]):
            good, step = good + step, next(steps)
        bad = min(good + step, n)
    else:
        bad, step = first, next(steps)
        while bad - step >= 0 and not fits(values[bad - step]):
            bad, step = bad - step, next(steps)
        good = bad - step if bad - step >= 0 else -1
    while bad - good > 1:  # values[good] fits (or good = -1), values[bad] does not (or bad = n)
        mid = (good + bad) // 2
        good, bad = (mid, bad) if fits(values[mid]) else (good, mid)
    return good


def _gallop() -> Iterator[int]:
    yield 1
    step = 1
    while True:
        yield step
        step *= 2
