"""One least-squares line, for every trend the gate reads from measured points.

A peak's growth per train step (meter.py: a leak shows as a slope) and an
exploration's calibration (explore.py: measured peak against the estimator's
prediction) are the same fit; one function keeps them from drifting apart.
"""

from __future__ import annotations

from collections.abc import Sequence


def least_squares(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float] | None:
    """(slope, intercept) of the least-squares line through the points; None without two distinct xs."""
    if len(xs) != len(ys):
        raise ValueError(f"least_squares: {len(xs)} xs against {len(ys)} ys")
    n = len(xs)
    if n < 2:
        return None
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    if sxx == 0:
        return None
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sxx
    return slope, mean_y - slope * mean_x
