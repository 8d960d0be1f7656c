"""The RSS timeline of three planted spikes, with what a 10 ms sampler and the meter made of them (a PNG).

The true timeline comes from a second process reading /proc/<pid>/statm in a
tight loop (no GIL shared with the measured process); the measured process
runs a psutil thread at 10 ms and brackets each spike with the Meter, so the
picture shows the sampler's points landing beside short spikes while the
meter's VmHWM reads each one whole.

    python -m benchmarks.timeline --json out.json        (capture; fidelity.py calls it)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchmarks.common import MIB

SPIKES = ((16, 1), (64, 10), (512, 100))  # (MiB, hold ms), numpy, one after another
GAP_S = 0.15
WATCH = """
import json, os, signal, sys, time
path, page, stop = f"/proc/{sys.argv[1]}/statm", os.sysconf("SC_PAGE_SIZE"), []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
until, samples = time.monotonic() + 60, []
print("ready", flush=True)
while not stop and (now := time.monotonic()) < until:
    with open(path) as fh:
        samples.append((now, int(fh.read().split()[1]) * page))
keep = [s for i, s in enumerate(samples) if i in (0, len(samples) - 1) or s[1] != samples[i - 1][1] or s[1] != samples[i + 1][1]]
print(len(samples)); print(json.dumps(keep))
"""


def capture() -> dict:
    import numpy  # noqa: F401
    import psutil

    from benchmarks.spikes import plant
    from gpu_budget.isolate.child import steady_malloc
    from gpu_budget.measure.meter import Meter
    from gpu_budget.measure.procfs import read_status

    steady_malloc()
    watcher = subprocess.Popen([sys.executable, "-c", WATCH, str(os.getpid())], stdout=subprocess.PIPE, text=True)
    assert watcher.stdout.readline().strip() == "ready"
    proc, sampled, done = psutil.Process(), [], threading.Event()

    def sample() -> None:
        while not done.is_set():
            sampled.append((time.monotonic(), proc.memory_info().rss))
            time.sleep(0.010)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    meter, spikes = Meter(use_cuda=False), []
    time.sleep(GAP_S)
    for size, ms in SPIKES:
        before = read_status("self")["VmRSS"]
        t0 = time.monotonic()
        meter.start("spike")
        plant("numpy", size * MIB, ms / 1000)
        seen = meter.stop().ram_peak - before
        spikes.append({"mib": size, "ms": ms, "t0": t0, "t1": time.monotonic(), "base": before, "meter_seen": seen})
        time.sleep(GAP_S)
    done.set()
    thread.join()
    watcher.terminate()  # the reader stops on SIGTERM and prints what it read
    out, _ = watcher.communicate()
    count, keep = out.strip().splitlines()
    return {"spikes": spikes, "sampler_10ms": sampled, "truth": json.loads(keep), "truth_samples": int(count),
            "note": "truth: /proc/<pid>/statm read in a tight loop by a second process"}


def _window(points: list, spike: dict, lo: float, hi: float) -> list[tuple[float, float]]:
    """(ms from the spike's start, MiB above the RSS before it) for the points between lo and hi."""
    return [((t - spike["t0"]) * 1000, (rss - spike["base"]) / MIB) for t, rss in points if lo <= t <= hi]


def draw(data: dict, path: Path) -> None:
    """One panel per spike: true RSS over time, the 10 ms sampler's points, the meter's reading."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(data["spikes"]), figsize=(4.2 * len(data["spikes"]), 3.4))
    for ax, spike in zip(axes, data["spikes"]):
        lo, hi = spike["t0"] - 0.03, spike["t1"] + 0.03

        truth, sampled = (_window(points, spike, lo, hi) for points in (data["truth"], data["sampler_10ms"]))
        if truth:
            ax.step(*zip(*truth), where="post", color="black", lw=1.2, zorder=3, label="true RSS (tight /proc reader)")
        if sampled:
            ax.plot(*zip(*sampled), "o", color="tab:orange", ms=5, alpha=0.6, zorder=2, label="psutil thread, 10 ms")
        ax.axhline(spike["meter_seen"] / MIB, color="tab:blue", ls="--", lw=1.2, label="meter (VmHWM)")
        ax.set_title(f"{spike['mib']} MiB held {spike['ms']} ms")
        ax.set_xlabel("ms from spike start")
        ax.set_xlim((lo - spike["t0"]) * 1000, (hi - spike["t0"]) * 1000)
        ax.set_ylim(-0.08 * spike["mib"], 1.15 * spike["mib"])
    axes[0].set_ylabel("RSS above the start (MiB)")
    axes[0].legend(loc="upper right", fontsize=7)
    fig.suptitle("Planted numpy spikes: what a 10 ms sampler sees vs the meter", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    args.json.write_text(json.dumps(capture()))


if __name__ == "__main__":
    main()
