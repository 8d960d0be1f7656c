"""Planted memory spikes and the in-process tools that try to see them (one tool per process).

A spike is a touched allocation (numpy or torch) of a known size, held for a
known time and freed. Every process sets the steady allocator first, as the
gate's children do, so each spike is its own mmap: resident while held, gone
when freed, and the planted size is the true RSS rise (under glibc's defaults a
freed block can stay resident and the next spike would not raise RSS at all).

Tools, each reading "how much did RSS rise during the spike":
  meter     this project's Meter: VmHWM reset through /proc/self/clear_refs
  psutil    a psutil thread sampling RSS every 10 ms (what one writes by hand)
  tracker   transformers' real TrainerMemoryTracker: its busy-loop thread, read
            as it documents (alloc delta + peaked delta = peak - begin)
pytest-memray's limit_memory runs the same spikes under pytest (spikes_memray.py).

    python -m benchmarks.spikes --tool meter --reps 10 --json out.json
"""

from __future__ import annotations

import argparse
import functools
import gc
import itertools
import json
import threading
import time
from pathlib import Path

from benchmarks.common import MIB

KINDS = ("numpy", "torch")
SIZES_MIB = (16, 64, 512)
HOLDS_MS = (1, 10, 100)
SETTLE_S = 0.05  # between spikes: lets a tool's thread catch up and a TrainerMemoryTracker thread exit


def plan(reps: int) -> list[dict]:
    """Every (kind, size, hold) spike `reps` times, interleaved so drift spreads evenly."""
    return [{"kind": k, "mib": s, "ms": h, "rep": r}
            for r, k, s, h in itertools.product(range(reps), KINDS, SIZES_MIB, HOLDS_MS)]


def plant(kind: str, nbytes: int, hold_s: float) -> float:
    """Allocate `nbytes`, touch every page (ones, not zeros: calloc'd pages stay unmapped), hold, free.

    Returns the seconds the allocation took to become resident (page faults:
    the spike ramps up for that long before it is held at full size).
    """
    t0 = time.perf_counter()
    if kind == "numpy":
        import numpy as np

        block = np.ones(nbytes, dtype=np.uint8)
    else:
        import torch

        block = torch.ones(nbytes, dtype=torch.uint8)
    ramp = time.perf_counter() - t0
    time.sleep(hold_s)
    del block
    return ramp


class PsutilSampler:
    """A thread that samples RSS every `interval` seconds and keeps the maximum since reset()."""

    def __init__(self, interval: float = 0.010) -> None:
        import psutil

        self.proc, self.interval, self.peak = psutil.Process(), interval, 0
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while True:
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(self.interval)

    def rss(self) -> int:
        return self.proc.memory_info().rss


def _meter_tool():
    from gpu_budget.measure.meter import Meter
    from gpu_budget.measure.procfs import read_status

    meter = Meter(use_cuda=False)

    def seen(spike) -> int:
        before = read_status("self")["VmRSS"]
        meter.start("spike")
        spike()
        return meter.stop().ram_peak - before
    return seen


def _psutil_tool():
    sampler = PsutilSampler(0.010)

    def seen(spike) -> int:
        before = sampler.rss()
        sampler.peak = before
        spike()
        return sampler.peak - before
    return seen


def _tracker_tool():
    from transformers.trainer_utils import TrainerMemoryTracker

    tracker = TrainerMemoryTracker(skip_memory_metrics=False)
    if tracker.skip_memory_metrics:
        raise RuntimeError("TrainerMemoryTracker skips itself here (no psutil?)")

    def train(spike) -> dict:  # the tracker names its stage after its caller: it must be called `train`
        tracker.start()
        spike()
        tracker.stop("train")
        return tracker.cpu["train"]

    def seen(spike) -> int:
        cpu = train(spike)
        return cpu["alloc"] + cpu["peaked"]  # its docs: the two deltas sum to what the code consumed
    return seen


def _plant_into(ramps: list[float], case: dict) -> None:
    ramps.append(plant(case["kind"], case["mib"] * MIB, case["ms"] / 1000))


TOOLS = {"meter": _meter_tool, "psutil": _psutil_tool, "tracker": _tracker_tool}


def run(tool: str, reps: int) -> list[dict]:
    import numpy  # noqa: F401  imported before the first spike, as in a real run
    import torch  # noqa: F401

    from gpu_budget.isolate.child import steady_malloc

    steady = steady_malloc()
    seen = TOOLS[tool]()
    out = []
    for case in plan(reps):
        gc.collect()
        time.sleep(SETTLE_S)
        ramp: list[float] = []
        got = seen(functools.partial(_plant_into, ramp, case))
        out.append({**case, "tool": tool, "seen": int(got), "ramp_ms": round(ramp[0] * 1000, 2), "steady_malloc": steady})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", choices=sorted(TOOLS), required=True)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    args.json.write_text(json.dumps(run(args.tool, args.reps)))


if __name__ == "__main__":
    main()
