"""Isolation cost per measured case: forkserver child vs fresh interpreter vs in-process.

Each way runs the same trivial scenario (one phase, one small tensor) so only
the cost of getting a clean, measurable process shows. Prints a markdown table.

    python benchmarks/isolation_cost.py [--repeat 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from gpu_budget import Scenario, isolate

SCENARIO = Scenario(name="trivial", run="benchmarks.isolation_cost:trivial")
FRESH = ("import torch, transformers, json, sys; from gpu_budget.meter import Meter; "
         "m = Meter(); m.start('step', step=1); t = torch.ones(1024, 1024); m.stop(); print(json.dumps(m.summary()['peaks']))")


def trivial(ctx):
    import torch

    with ctx.meter.phase("train_step_1", step=1):
        torch.ones(1024, 1024)


def _time(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

    t0 = time.perf_counter()
    isolate.probe()  # starts the forkserver, which imports torch + transformers once
    server_start = time.perf_counter() - t0
    job = SCENARIO.to_json("tiny")
    forkserver = _time(lambda: isolate.measure(job, Path("."), timeout=120, threads=1), args.repeat)
    fresh = _time(lambda: subprocess.run([sys.executable, "-c", FRESH], check=True, capture_output=True), args.repeat)

    from gpu_budget.meter import Meter

    def in_process():
        import torch

        m = Meter()
        m.start("train_step_1", step=1)
        torch.ones(1024, 1024)
        m.stop()

    inproc = _time(in_process, args.repeat)
    med = statistics.median
    print(f"forkserver start (imports torch + transformers once): {server_start:.2f} s\n")
    print("| isolation | median s per case | min | max | vs forkserver |")
    print("|---|---|---|---|---|")
    for name, xs in (("forkserver child (preloaded)", forkserver), ("fresh interpreter", fresh),
                     ("in-process (no isolation)", inproc)):
        print(f"| {name} | {med(xs):.3f} | {min(xs):.3f} | {max(xs):.3f} | {med(xs) / med(forkserver):.2f}x |")


if __name__ == "__main__":
    main()
