"""The further runs a case may take beside its judged one: a baseline recorded over several fresh runs, and the
recording re-run of a failing CUDA case that keeps its memory snapshot."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from gpu_budget.declare.scenario import Scenario
from gpu_budget.isolate import unix_paths
from gpu_budget.isolate.protocol import RunChild, SnapshotRequest
from gpu_budget.judge import baselines, growth
from gpu_budget.model.entry import Spread
from gpu_budget.model.result import Measurement, SnapshotRun
from gpu_budget.report import artifacts
from gpu_budget.units import format_size


@dataclass(frozen=True)
class Snapshot:
    """The recording re-run (never judged), the memory snapshot it kept (None: none dumped or kept), and why one dumped
    was not kept."""

    run: SnapshotRun
    kept: str | None
    lost: str | None = None


def record_runs(scenario: Scenario, run_child: RunChild, first: Measurement,
                runs: int) -> tuple[Measurement, Spread | None, str | None]:
    """The run a baseline entry keeps and the spread of `runs` fresh runs (`first`, the judged one, and runs - 1 more
    children through the session's runner), or why it cannot be recorded: a further run that failed records
    nothing. One run: `first`, no spread (the entry is as one recorded before --gpu-budget-record-runs)."""
    if runs <= 1:
        return first, None, None
    measured = [first]
    for index in range(2, runs + 1):
        again = run_child(scenario, None)
        if not again.ok:
            error = again.error
            return first, None, (f"recording run {index} of {runs} failed ({error.kind}): {error.message}; "
                                 "nothing recorded")
        measured.append(again)
    return baselines.median_run(measured), _spread(measured), None


def _spread(measured: list[Measurement]) -> Spread:
    """The runs' spread, and under a launcher each rank's that every run holds (Spread.ranks): the row's steps are
    its worst rank's, whose noise is not another rank's."""
    steps = [m.steps for m in measured]
    spread = Spread.of([m.peaks for m in measured], growth.largest(steps), growth.largest_blocks(steps))
    held = set.intersection(*({r.rank for r in m.ranks} for m in measured))
    ranks = {}
    for rank in sorted(held):
        own = [next(r for r in m.ranks if r.rank == rank) for m in measured]
        steps = [r.steps for r in own]
        ranks[rank] = Spread.of([r.peaks for r in own], growth.largest(steps), growth.largest_blocks(steps))
    return replace(spread, ranks=ranks)


def recorded_text(kept: Measurement, spread: Spread) -> str:
    """What the row says of an entry recorded over several runs: the run kept, and the spread of each gated figure."""
    each = ", ".join(f"{metric} {format_size(size)}" for metric, size in spread.by_metric.items())
    grew = ", ".join(f"{metric} {format_size(size)}/step{_in_blocks(spread, metric)}" for metric, size in spread.growth.items())
    return (f"{spread.runs} fresh runs: the median run's figures kept (host RAM {format_size(kept.peaks.gated_ram)}), "
            f"spread {each or 'none measured'}" + (f"; largest growth {grew}" if grew else ""))


def _in_blocks(spread: Spread, metric: str) -> str:
    """The growth the runs read in their largest blocks of steps, where they were long enough to read blocks."""
    by = spread.blocks.get(metric)
    if not by:
        return ""
    size = max(by)
    return f" ({format_size(by[size])}/step in blocks of {size} judged steps)"


def snapshot_run(scenario: Scenario, run_child: RunChild, folder: Path, nodeid: str, shared: bool = False) -> Snapshot:
    """Run a failing CUDA case once more with the allocation recorder on, and keep its memory snapshot.

    The recorder costs host RAM and time, so the judged run never records; this
    second run is reported beside the row ("snapshot_run"), never judged or recorded. `shared`: another test has its
    file name (artifacts.keep_snapshot).
    """
    path = unix_paths.snapshot_file()  # held: a later session removes it where this one is killed meanwhile
    try:
        again = run_child(scenario, SnapshotRequest(path))
        run = SnapshotRun(again.status, again.peaks, again.error, again.wall_seconds)
        if not again.snapshot:
            return Snapshot(run, None)
        try:
            return Snapshot(run, artifacts.keep_snapshot(again.snapshot, folder, nodeid, shared))
        except OSError as exc:  # the recording run is reported all the same; the row says the file was lost
            return Snapshot(run, None, f"memory snapshot not kept: could not move it into {folder}: {exc.strerror or exc}")
    finally:
        unix_paths.remove(os.path.dirname(path))
