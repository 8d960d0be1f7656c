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

from benchmarks.common import MIB, ROOT, THREADS, gate_preload, med, missing, ran, write
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


# -- RESULTS.md section 3, from this script's JSON (benchmarks/report.py joins the sections) -------------------------

def section(iso: dict | None) -> list[str]:
    """Section 3 from isolation.json: a case's time and peak per way of isolating it."""
    out = ["## 3. Isolation cost per measured case", ""]
    if iso is None:
        return out + missing("isolation", "isolation")
    names = {"forkserver": "forkserver child (preloaded)", "fresh": "fresh interpreter", "in-process": "in-process (no isolation)"}
    out += [ran(iso), "",
            (f"The same case three ways, alternating (`benchmarks/isolation_cost.py`). The forkserver itself starts once "
            f"per session and imports the gate's preload ({', '.join(iso['preload'])}): "
            f"{iso['forkserver_start_s']:.1f} s. The fresh interpreter runs the same child body (`gpu_budget.isolate.child.main`) "
            f"and pays its own imports. In-process runs skip isolation; their first run paid this process's imports."), ""]
    for case in iso["cases"]:
        fork = med(case["ways"]["forkserver"]["seconds"])
        out += [f"**{case['case']}** (in-process first run: {case['in_process_first_s']:.2f} s)", "",
                "| isolation | runs | median s per case | min | max | vs forkserver | RAM peak reported (min .. max) |",
                "|---|---|---|---|---|---|---|"]
        for way, v in case["ways"].items():
            s, p = v["seconds"], [x for x in v["peaks"] if x is not None]
            out.append(f"| {names[way]} | {len(s)} | {med(s):.3f} | {min(s):.3f} | {max(s):.3f} | {med(s) / fork:.2f}x | "
                       f"{min(p) / MIB:.1f} .. {max(p) / MIB:.1f} MiB |")
        out.append("")
    out += [_peak_note(iso), ""]
    return out


def _peak_note(iso: dict) -> str:
    """How far the other two ways' peaks sit from the forkserver child's, the one the baselines hold."""
    parts = []
    for case in iso["cases"]:
        fork = med(case["ways"]["forkserver"]["peaks"])
        diffs = ", ".join(f"{way} {(med(v['peaks']) - fork) / MIB:+.1f} MiB" for way, v in case["ways"].items() if way != "forkserver")
        parts.append(f"{case['case']}: {diffs}")
    return ("Isolation also changes the number: the gate's baselines hold forkserver-child peaks (which include the preloaded "
            "modules' pages a child touches), and the same case reports differently the other ways (median vs the "
            "forkserver child; " + "; ".join(parts) + "): a fresh interpreter imports only what the case needs, and an "
            "in-process run carries whatever its process holds.")


def headline(iso: dict | None) -> list[str]:
    """The headline's lines for section 3: each isolation against the forkserver child, and its one-time start."""
    if not iso:
        return []
    out = []
    for case in iso["cases"]:
        w = {k: med(v["seconds"]) for k, v in case["ways"].items()}
        out.append(f"- Isolation, {case['case']}: fresh interpreter {w['fresh'] / w['forkserver']:.1f}x the forkserver "
                   f"child ({w['forkserver']:.2f} s vs {w['fresh']:.2f} s); in-process {w['in-process'] / w['forkserver']:.2f}x.")
    out.append(f"- Isolation, once per session: the forkserver's own start (its preload imported) took "
               f"{iso['forkserver_start_s']:.1f} s; a session pays it once, however many cases it measures.")
    return out


if __name__ == "__main__":
    main()
