"""The run after a block (a gap), kept only where it adds: one rule for a process's meter and a launcher's ranks.

A gap whose every figure stays within GAP_NOISE of the phase before it moves
no peak of the run, so it is no phase of its own: a function case's meter
drops it (meter.py), and a rank's GPU figures of one the node dropped are
judged by the same rule (ranks.py), so both record the same phases.
"""

from __future__ import annotations

from gpu_budget.model.figures import Peaks

GAP_NOISE = 2**20  # the interpreter's own between two blocks: a gap past the phase before by no more is not recorded


def reaches_past(peaks: Peaks, before: Peaks | None) -> bool:
    """Whether a gap's figures reached past those of the phase before it (by more than GAP_NOISE) in some figure."""
    return before is None or any(value > (before.figure(metric) or 0) + GAP_NOISE
                                 for metric, value in peaks.measured.items())
