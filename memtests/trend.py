"""A step series' least-squares slope over steps 2+: the trend some findings describe (S2's climb with its dynamic
batches, S1's script against its runner).

Not the gate's growth rule (gpu_budget/measure/rises.py, the row's `growth`), which judges a leak still going on at
the end of a run of 9 steps or more; these findings describe the whole series of a short run, so they fit it here.
"""

from gpu_budget.measure.fit import least_squares


def slope(steps, metric: str) -> float | None:
    """Bytes per step of `metric` over a row's steps after the first (the optimizer state's); None under 3 points."""
    ys = [y for s in steps[1:] if (y := s.figure(metric)) is not None]
    return least_squares(range(len(ys)), ys)[0] if len(ys) >= 3 else None
