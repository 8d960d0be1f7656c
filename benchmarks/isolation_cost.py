"""Section 3, isolation cost per measured case: forkserver child vs fresh interpreter vs in-process.

The same measured case three ways, alternating rep by rep:
  forkserver   forkserver.measure: a child of the gate's preloaded forkserver
  fresh        a new `python` running the same child body (child.main), paying its imports
  in-process   the scenario's run called in this process with a Meter (no isolation)
Cases: a trivial one (one phase, one 4 MiB tensor: pure isolation cost) and a
real one (S1 truncated, tiny). The RAM peak each way reports is kept too: an
in-process peak carries the allocator's history of the runs before it.

    python -m benchmarks.isolation_cost [--reps 10] [--real-reps 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, THREADS, gate_preload, write
from gpu_budget.isolate import events

FRESH = "import json, sys; from gpu_budget import child; child.main(json.loads(sys.argv[1]), sys.argv[2])"


def trivial(ctx):
    import torch

    with ctx.meter.phase("train_step_1", step=1):
        torch.ones(1024, 1024)


def _fresh(request: dict) -> int | None:
    """child.main in a new interpreter (cwd: the repo root); the RAM peak it reported."""
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as out:
        subprocess.run([sys.executable, "-c", FRESH, json.dumps(request), out.name], cwd=ROOT, check=True)
        seen = events.read(out.name)
    error = events.first(seen, events.Failed)
    if error is not None:
        raise RuntimeError(error.traceback)
    return events.first(seen, events.Finished).summary["peaks"]["ram"]


def _in_process(job: dict, assets: Path) -> int | None:
    from gpu_budget.declare.scenario import RunContext, resolve_ref
    from gpu_budget.measure.meter import Meter

    meter = Meter(use_cuda=False)
    resolve_ref(job["run"])(RunContext(job["scale"], job["params"], tuple(job["fixes"]), assets, "cpu", meter))
    meter.stop()
    return meter.summary()["peaks"]["ram"]


def case(label: str, job: dict, assets: Path, reps: int, preload: tuple[str, ...]) -> dict:
    from gpu_budget.isolate import forkserver

    request = {"mode": "measure", "scenario": job, "assets": str(assets), "threads": THREADS, "malloc": "steady"}
    ways = {"forkserver": lambda: forkserver.measure(job, assets, 900, THREADS, preload).peaks["ram"],
            "fresh": lambda: _fresh(request),
            "in-process": lambda: _in_process(job, assets)}
    t0 = time.perf_counter()
    first_in_process = _in_process(job, assets)  # pays this process's imports once, like a forkserver start
    out = {"case": label, "in_process_first_s": time.perf_counter() - t0, "in_process_first_peak": first_in_process,
           "ways": {w: {"seconds": [], "peaks": []} for w in ways}}
    for rep in range(reps):
        for way, fn in ways.items():
            t0 = time.perf_counter()
            peak = fn()
            out["ways"][way]["seconds"].append(time.perf_counter() - t0)
            out["ways"][way]["peaks"].append(peak)
        print(f"isolation {label} rep {rep}: " + ", ".join(f"{w} {v['seconds'][-1]:.2f} s" for w, v in out["ways"].items()),
              flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10, help="reps of the trivial case")
    parser.add_argument("--real-reps", type=int, default=5, help="reps of the S1 case")
    args = parser.parse_args()

    import torch
    from s1_wav2vec2.scenarios import AS_REPORTED

    from gpu_budget import Scenario
    from gpu_budget.isolate import forkserver
    from gpu_budget.isolate.child import steady_malloc

    torch.set_num_threads(THREADS)
    steady_malloc()  # in-process runs get the children's allocator set-up too
    preload = gate_preload()
    t0 = time.perf_counter()
    forkserver.probe(preload=preload)  # starts the forkserver, which imports the gate's preload once
    server_start = time.perf_counter() - t0

    s1 = AS_REPORTED.with_fixes("truncate")
    s1_assets = Path(tempfile.gettempdir()) / "gpu-budget-bench" / s1.asset_key("tiny")
    forkserver.prepare_assets(s1.to_json("tiny"), s1_assets, 900, THREADS, preload)
    trivial_job = Scenario(name="trivial", run="benchmarks.isolation_cost:trivial").to_json("tiny")
    cases = [case("trivial (one phase, a 4 MiB tensor)", trivial_job, Path("."), args.reps, preload),
             case("S1 truncate, tiny", s1.to_json("tiny"), s1_assets, args.real_reps, preload)]
    write("isolation", {"threads": THREADS, "forkserver_start_s": server_start, "preload": list(preload), "cases": cases})


if __name__ == "__main__":
    main()
