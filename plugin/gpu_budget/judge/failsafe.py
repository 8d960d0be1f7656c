"""The fail-safe: a gate must never pass because nothing was measured. Says which case it is.

Plain data in, problems out; the session decides whether they fail the run
(CI, --gpu-budget-require-gpu) or are warnings (by hand).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpu_budget.model.result import Result


def nothing_measured(*, selected: int, rows: list[Result], probes: int, require_gpu: bool, ci: bool, update: bool,
                     baselines: Path, hardware: dict[str, Any] | None, device: Callable[[], dict[str, Any] | None]) -> list[str]:
    """What the fail-safe finds. `probes` counts unjudged children (peak()); `device` probes the device lazily."""
    found = []
    measured = [r for r in rows if r.measured]  # a measured child ran (even if it crashed)
    if not selected:
        found.append("no memory-budget test was collected (no selected test has the gpu_budget marker "
                     "or fixture): the gate measured nothing")
    elif not measured and not probes:
        reasons = Counter(r.message for r in rows if r.verdict in ("skipped", "error"))
        detail = "; ".join(f"{n} x {why}" for why, n in reasons.most_common()) or "none reached measure()"
        found.append(f"{selected} memory-budget test(s) selected, none measured: {detail}")
    if require_gpu and not (device() or {}).get("cuda"):
        needed = sum(1 for r in rows if "needs a CUDA GPU" in r.message)
        key = (hardware or {}).get("key", "unknown")
        found.append(f"--gpu-budget-require-gpu: the measured children saw no CUDA GPU (hardware key "
                     f"{key}, CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}); "
                     f"{needed} test(s) needed one")
        return found  # a baselines folder for the wrong hardware would only mislead
    if measured and ci and not update and hardware:
        folder = baselines / hardware["key"]
        if not folder.is_dir():
            found.append(f"no baselines folder {folder} for this hardware (CI is set): record one with "
                         f"--gpu-budget-update and commit it")
    return found
