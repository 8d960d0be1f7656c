"""Budgets a finished run's figures cannot test: a VRAM budget with no GPU figure, imbalance= with fewer than two ranks.

The gate errs on such a case (session/can_run.py), and the remediation search on such a set (search/remediate.py),
rather than pass a budget with nothing behind the verdict.
"""

from __future__ import annotations

from gpu_budget.model.budget import Budget
from gpu_budget.model.result import Measurement
from gpu_budget.units import format_size


def vram(budget: Budget, measurement: Measurement, whose: str, unseen: str = "") -> str | None:
    """Why a VRAM budget tested nothing on a run that finished, or None: `whose` run reported no GPU figure (`unseen`:
    the other reason it may not have, said after the first)."""
    if budget.vram is None or not measurement.ok or measurement.peaks.vram_allocated is not None:
        return None
    return (f"VRAM budget {format_size(budget.vram)}, but no GPU figure was measured: {whose} never initialised CUDA "
            f"(it trained on the CPU?){unseen}, so the budget would test nothing")


def imbalance(budget: Budget, measurement: Measurement, who: str, see: str = "") -> str | None:
    """Why an imbalance= budget tested nothing on a run that finished, or None: `who` ran fewer than two ranks (no
    launcher, or one rank), so there is no ratio to bound (`see`: where to read more)."""
    ranks = len(measurement.ranks)
    if budget.imbalance is None or not measurement.ok or ranks > 1:
        return None
    return (f"imbalance={budget.imbalance:g} bounds a launcher's largest rank over its smallest, but {who} ran "
            f"{ranks or 'no'} rank{'s' if ranks != 1 else ''} under a launcher: the budget would test nothing{see}")
