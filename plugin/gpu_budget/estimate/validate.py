"""The estimator against real runs: per scenario, estimated tensor bytes vs measured step peak minus the floor.

The floor is the peak RSS of an empty measured child from the same
forkserver (same preload): what every measured child holds before its first
phase. measured - floor is then what the run added by its step peak; the
estimate predicts the tensor part of it. The difference is the estimator's
error: non-tensor memory (datasets, Trainer objects, allocator slack, file
pages of loaded weights), plus whatever the estimator models wrongly.

    python -m gpu_budget estimate --validate -o table.md CASE ...
"""

from __future__ import annotations

import itertools
import tempfile
import time
from pathlib import Path
from typing import Any

from gpu_budget.declare.scenario import Scenario
from gpu_budget.estimate import estimate_scenario
from gpu_budget.isolate import forkserver
from gpu_budget.units import format_size


def floor(ctx) -> dict[str, Any]:
    """An empty measured run: its only phase's peak is the child's RSS before any work."""
    ctx.meter.start("load")
    ctx.meter.stop()
    return {}


FLOOR = Scenario(name="floor", run="gpu_budget.estimate.validate:floor")


def measure(scenario: Scenario, scale: str, assets_root: Path, threads: int, preload: tuple[str, ...],
            timeout: float = 900) -> dict[str, Any]:
    """One real measured run, as the gate runs it (prepared assets cached under assets_root)."""
    job, assets = scenario.to_json(scale), assets_root / scenario.asset_key(scale)
    if scenario.prepare:
        forkserver.prepare_assets(job, assets, timeout, threads, preload)
    assets.mkdir(parents=True, exist_ok=True)
    return forkserver.measure(job, assets, timeout, threads, preload)


def compare(cases: dict[str, Scenario], scale: str = "tiny", threads: int = 2,
            preload: tuple[str, ...] = forkserver.DEFAULT_PRELOAD, assets_root: Path | None = None,
            progress=print) -> dict[str, Any]:
    """Estimate and really run every case; returns {"floor": bytes, "rows": [...]} (bytes, seconds)."""
    assets_root = assets_root or Path(tempfile.gettempdir()) / "gpu-budget-estimate-assets"
    base = measure(FLOOR, "tiny", assets_root, threads, preload)
    floor_bytes = base.peaks.ram
    progress(f"floor (empty child): {format_size(floor_bytes)}")
    rows = []
    for label, scenario in cases.items():
        t0 = time.perf_counter()
        est = estimate_scenario(scenario, scale)
        est_seconds = time.perf_counter() - t0
        real = measure(scenario, scale, assets_root, threads, preload)
        step = real.step_peaks.ram if real.step_peaks is not None else None
        added = None if step is None else step - floor_bytes
        entering = _entering_steps(list(real.phases.values()))
        row = {
            "label": label, "scenario": scenario.name, "fixes": list(scenario.fixes), "status": real.status,
            "estimate": est.step_peak, "at_peak": est.at_peak, "estimate_phase": est.peak_phase,
            "measured_step_peak": step, "floor": floor_bytes, "measured_added": added,
            "error": None if added is None else est.step_peak - added,
            "estimate_at_step_start": est.built, "measured_entering_steps": entering,
            "increment_error": None if step is None or entering is None
            else (est.step_peak - est.built) - (step - entering),
            "estimate_seconds": round(est_seconds, 2), "real_seconds": real.wall_seconds,
            "steps_measured": len(real.steps), "steps_estimated": est.steps,
            "notes": est.notes, "assumed": est.assumed,
        }
        rows.append(row)
        progress(f"{label}: estimate {format_size(est.step_peak)}, measured {format_size(step)} - floor = "
                 f"{format_size(added)} ({est_seconds:.1f} s vs {real.wall_seconds} s)")
    return {"floor": floor_bytes, "rows": rows, "scale": scale, "threads": threads, "preload": list(preload)}


def _entering_steps(phases: list[dict[str, Any]]) -> int | None:
    """RSS (anon + file) at the end of the phase before the first train step: what the steps start from."""
    for before, phase in itertools.pairwise(phases):
        if phase.get("step") is not None:
            if before.get("rss_anon") is None:
                return None
            return before["rss_anon"] + (before.get("rss_file") or 0)
    return None

