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
from collections.abc import Callable
from pathlib import Path

from gpu_budget.declare.params import Json
from gpu_budget.declare.scenario import RunContext, Scenario
from gpu_budget.estimate import Estimate, estimate_scenario
from gpu_budget.estimate.rows import Validation, ValidationRow
from gpu_budget.isolate import forkserver
from gpu_budget.model.figures import PhaseRecord
from gpu_budget.model.result import Measurement
from gpu_budget.units import format_size


def floor(ctx: RunContext) -> dict[str, Json]:
    """An empty measured run: its only phase's peak is the child's RSS before any work."""
    ctx.meter.start("load")
    ctx.meter.stop()
    return {}


FLOOR = Scenario(name="floor", run="gpu_budget.estimate.validate:floor")


def measure(scenario: Scenario, scale: str, assets_root: Path, threads: int, preload: tuple[str, ...],
            timeout: float = 900) -> Measurement:
    """One real measured run, as the gate runs it (prepared assets cached under assets_root)."""
    job, assets = scenario.to_json(scale), assets_root / scenario.asset_key(scale)
    if scenario.prepare:
        forkserver.prepare_assets(job, assets, timeout, threads, preload)
    assets.mkdir(parents=True, exist_ok=True)
    return forkserver.measure(job, assets, timeout, threads, preload)


def compare(cases: dict[str, Scenario], scale: str = "tiny", threads: int = 2,
            preload: tuple[str, ...] = forkserver.DEFAULT_PRELOAD, assets_root: Path | None = None,
            progress: Callable[[str], object] = print) -> Validation:
    """Estimate and really run every case, beside the floor (bytes, seconds).

    A case that cannot be estimated is said through `progress` and left out of the rows (and not run), so one
    case does not hide the others; the Validation keeps why (`not_estimated`), for the table saved.
    """
    assets_root = assets_root or Path(tempfile.gettempdir()) / "gpu-budget-estimate-assets"
    base = measure(FLOOR, "tiny", assets_root, threads, preload)
    floor_bytes = base.peaks.ram
    progress(f"floor (empty child): {format_size(floor_bytes)}")
    rows, not_estimated = [], {}
    for label, scenario in cases.items():
        t0 = time.perf_counter()
        try:
            est = estimate_scenario(scenario, scale)
        except Exception as exc:  # noqa: BLE001  one case that cannot be estimated must not hide the others
            not_estimated[label] = f"{type(exc).__name__}: {exc}"
            progress(f"{label}: no estimate ({not_estimated[label]})")
            continue
        est_seconds = time.perf_counter() - t0
        real = measure(scenario, scale, assets_root, threads, preload)
        rows.append(_row(label, scenario, est, round(est_seconds, 2), real, floor_bytes))
        measured = (f"the real run failed ({rows[-1].failure})" if rows[-1].failure is not None else
                    f"measured {format_size(rows[-1].measured_step_peak)} - floor = {format_size(rows[-1].measured_added)}")
        progress(f"{label}: estimate {format_size(est.step_peak)}, {measured} ({est_seconds:.1f} s vs {real.wall_seconds} s)")
    return Validation(floor=floor_bytes, rows=tuple(rows), scale=scale, threads=threads, preload=tuple(preload),
                      not_estimated=not_estimated)


def _row(label: str, scenario: Scenario, est: Estimate, est_seconds: float, real: Measurement,
         floor_bytes: int | None) -> ValidationRow:
    """The case's estimate beside its real run: what the run added over the floor, and what its steps added."""
    step = real.step_peaks.ram if real.step_peaks is not None else None
    added = None if step is None else step - floor_bytes
    entering = _entering_steps(list(real.phases.values()))
    return ValidationRow(
        label=label, scenario=scenario.name, fixes=tuple(scenario.fixes), status=real.status,
        estimate=est.step_peak, at_peak=est.at_peak, estimate_phase=est.peak_phase,
        measured_step_peak=step, floor=floor_bytes, measured_added=added,
        error=None if added is None else est.step_peak - added,
        estimate_at_step_start=est.built, measured_entering_steps=entering,
        increment_error=None if step is None or entering is None else (est.step_peak - est.built) - (step - entering),
        estimate_seconds=est_seconds, real_seconds=real.wall_seconds,
        steps_measured=len(real.steps), steps_estimated=est.steps, notes=tuple(est.notes), assumed=est.assumed,
        failure=_failure(real))


NO_STEP = "no train step ran (no phase marked step=): no step peak to compare the estimate with"


def _failure(real: Measurement) -> str | None:
    """Why the real run gives no figure, in one line (its kind, the exception's type and first line; or that it ran
    no train step, so has no step peak), None when it has one."""
    if real.status == "ok":
        return None if real.steps else NO_STEP
    if real.error is None:
        return "failed (no reason recorded)"
    said = ": ".join(part for part in (real.error.type, real.error.message.strip().split("\n")[0]) if part)
    return f"{real.error.kind}: {said}" if said else real.error.kind


def _entering_steps(phases: list[PhaseRecord]) -> int | None:
    """RSS (anon + file) at the end of the phase before the first train step: what the steps start from."""
    for before, phase in itertools.pairwise(phases):
        if phase.step is not None:
            if before.rss_anon is None:
                return None
            return before.rss_anon + (before.rss_file or 0)
    return None
