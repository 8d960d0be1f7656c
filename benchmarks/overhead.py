"""Section 2, overhead: wall time of real S1 training steps bare, under the meter, the tracker and memray.

Each run is a gate child (forkserver, gate preload, one torch thread) running
S1's real runner at tiny or real scale, wrapped by `run_under`:
  bare     phases timed by a stopwatch only (perf_counter at each phase start)
  meter    this project's Meter (clear_refs + /proc/self/status per phase)
  tensors  the Meter and the live tensor-bytes counter (tensors.TensorPeak): what a CPU case
           of the gate runs under by default
  tracker  the stopwatch plus transformers' TrainerMemoryTracker busy-loop thread
           running through the whole run, as Trainer(skip_memory_metrics=False) runs it
  memray   the stopwatch plus memray.Tracker with pytest-memray's settings
Tools alternate run by run, in an order rotated each repetition, so a noisy
neighbour and a position in the sequence hit them alike; a run's figure is its
median step time over steps 2+ (step 1 allocates AdamW state), and each tool's
ratio to bare is taken within a repetition, so RESULTS.md gives the median
ratio and its range over repetitions.

    python -m benchmarks.overhead [--reps 5] [--real-reps 3] [--scales tiny,real]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from benchmarks.common import THREADS, gate_preload, med, write

TOOLS = ("bare", "meter", "tensors", "tracker", "memray")


class Stopwatch:
    """The Meter's phase interface with nothing but a clock: what 'bare' costs."""

    def __init__(self) -> None:
        self.phases, self._open = [], None

    def start(self, name: str, step: int | None = None) -> None:
        now = time.perf_counter()
        self.stop(now)
        self._open = (name, step, now)

    def stop(self, now: float | None = None) -> None:
        if self._open is not None:
            name, step, t0 = self._open
            self.phases.append({"name": name, "step": step, "seconds": (now or time.perf_counter()) - t0})
            self._open = None

    @contextmanager
    def phase(self, name: str, step: int | None = None):
        self.start(name, step)
        try:
            yield
        finally:
            self.stop()


def train(tracker, target, ctx):  # TrainerMemoryTracker names its stage after its caller: this must be `train`
    tracker.start()
    try:
        return target(ctx)
    finally:
        tracker.stop("train")


def run_under(ctx) -> dict:
    """In the measured child: S1's runner (params bench_target) under the tool named by params bench_tool."""
    from gpu_budget.scenario import resolve_ref

    tool, target = ctx.params["bench_tool"], resolve_ref(ctx.params["bench_target"])
    clock = ctx.meter if tool in ("meter", "tensors") else Stopwatch()
    ctx.meter = clock
    extra = {}
    t0 = time.perf_counter()
    if tool == "tracker":
        from transformers.trainer_utils import TrainerMemoryTracker

        tracker = TrainerMemoryTracker(skip_memory_metrics=False)
        train(tracker, target, ctx)
        extra["tracker_peak"] = tracker.cpu["train"]["begin"] + tracker.cpu["train"]["alloc"] + tracker.cpu["train"]["peaked"]
    elif tool == "memray":
        import memray

        fd, path = tempfile.mkstemp(suffix=".bin")
        os.close(fd)
        os.unlink(path)
        try:
            with memray.Tracker(path, native_traces=False, trace_python_allocators=False,
                                file_format=memray.FileFormat.AGGREGATED_ALLOCATIONS):
                target(ctx)
            extra["memray_peak"] = memray.FileReader(path).metadata.peak_memory
        finally:
            Path(path).unlink(missing_ok=True)
    else:
        target(ctx)
    clock.stop()
    total = time.perf_counter() - t0
    phases = [p.to_json() if hasattr(p, "to_json") else p for p in clock.phases]
    return {"bench": {"tool": tool, "total_s": total, **extra,
                      "steps_s": [p["seconds"] for p in phases if p.get("step") is not None]}}


def measure(scale: str, reps: int) -> dict:
    from s1_scenarios import S1

    from gpu_budget import isolate

    preload = gate_preload()
    assets = Path(tempfile.gettempdir()) / "gpu-budget-bench" / S1.asset_key(scale)
    isolate.prepare_assets(S1.to_json(scale), assets, 1800, THREADS, preload)
    runs = []
    for rep in range(reps):
        k = rep % len(TOOLS)
        for tool in TOOLS[k:] + TOOLS[:k]:
            job = S1.with_params(bench_tool=tool, bench_target=S1.run).to_json(scale)
            job["run"] = "benchmarks.overhead:run_under"
            m = isolate.measure(job, assets, 1800, THREADS, preload, tensors=tool == "tensors")
            if m["status"] != "ok":
                raise RuntimeError(f"{tool} {scale}: {m['error']}")
            bench = m["info"]["bench"]
            runs.append({"rep": rep, "tool": tool, "total_s": bench["total_s"], "steps_s": bench["steps_s"],
                         "step_median_s": med(bench["steps_s"][1:]), "child_wall_s": m["wall_seconds"],
                         "ram_peak": m["peaks"]["ram"], "tracker_peak": bench.get("tracker_peak"),
                         "memray_peak": bench.get("memray_peak")})
            print(f"overhead {scale} rep {rep} {tool}: step {runs[-1]['step_median_s']:.3f} s, run {bench['total_s']:.1f} s",
                  flush=True)
    return {"scenario": f"S1 ({S1.name}) {scale}", "steps": len(runs[0]["steps_s"]), "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="runs per tool at tiny scale")
    parser.add_argument("--real-reps", type=int, default=3, help="runs per tool at real scale")
    parser.add_argument("--scales", default="tiny,real")
    args = parser.parse_args()
    out = {}
    for scale in args.scales.split(","):
        out[scale] = measure(scale, args.reps if scale == "tiny" else args.real_reps)
    write("overhead", {"threads": THREADS, "tools": list(TOOLS), "scales": out})


if __name__ == "__main__":
    main()
