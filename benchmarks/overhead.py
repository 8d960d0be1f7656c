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

The tree part (`--part tree`, stored under "tree" with its own run fingerprint)
times the process-tree reading: S1 tiny with 4 DataLoader workers (the worker
memtest's configuration, 12 steps) and plain S1 tiny, each under
  bare           a stopwatch only (the child's tree thread stopped)
  meter-no-tree  the Meter with its tree thread stopped: the main process only
  meter          the Meter as the gate runs it, reading the tree
in rounds whose order rotates; each round's ratios to its own bare run are the
figures, summarised as a geometric mean with a 95 % t-interval.

The tools are summarised like the tree part: each repetition's ratios to its
own bare run, their geometric mean and 95 % t-interval. `--scales real` (or
tiny) re-measures that scale alone, keeping the other scale and the tree part,
each scale with its own run fingerprint; `--tools` measures a subset (bare
always among them); the results are written after every repetition, so a run
cut short keeps the repetitions it finished.

    python -m benchmarks.overhead [--reps 5] [--real-reps 3] [--scales tiny,real] [--tools bare,meter,memray]
    python -m benchmarks.overhead --part tree [--rounds 8]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

from benchmarks.common import MIB, RESULTS, THREADS, fingerprint, gate_preload, med, missing, ran, write

TOOLS = ("bare", "meter", "tensors", "tracker", "memray")
TREE_TOOLS = ("bare", "meter-no-tree", "meter")
T95 = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26, 11: 2.23, 12: 2.20}  # t(0.975, n-1)


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
    from gpu_budget.declare.scenario import resolve_ref

    tool, target = ctx.params["bench_tool"], resolve_ref(ctx.params["bench_target"])
    if tool not in ("meter", "tensors"):  # only "meter" and "tensors" read the process tree: the others run without its thread
        ctx.meter.close()
        ctx.meter.tree = None
    clock = ctx.meter if tool in ("meter", "meter-no-tree", "tensors") else Stopwatch()
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


def measure(scale: str, reps: int, tools: tuple[str, ...] = TOOLS, save=None) -> dict:
    """`reps` rotated repetitions of one run per tool; `save(result)` is called after each repetition."""
    from s1_wav2vec2.scenarios import S1

    from gpu_budget.isolate import forkserver

    preload = gate_preload()
    assets = Path(tempfile.gettempdir()) / "gpu-budget-bench" / S1.asset_key(scale)
    forkserver.prepare_assets(S1.to_json(scale), assets, 1800, THREADS, preload)
    runs, result = [], {}
    for rep in range(reps):
        k = rep % len(tools)
        for tool in tools[k:] + tools[:k]:
            job = S1.with_params(bench_tool=tool, bench_target=S1.run).to_json(scale)
            job["run"] = "benchmarks.overhead:run_under"
            m = forkserver.measure(job, assets, 1800, THREADS, preload, tensors=tool == "tensors")
            if not m.ok:
                raise RuntimeError(f"{tool} {scale}: {m['error']}")
            bench = m.info["bench"]
            runs.append({"rep": rep, "tool": tool, "total_s": bench["total_s"], "steps_s": bench["steps_s"],
                         "step_median_s": med(bench["steps_s"][1:]), "child_wall_s": m.wall_seconds,
                         "ram_peak": m.peaks["ram"], "tracker_peak": bench.get("tracker_peak"),
                         "memray_peak": bench.get("memray_peak"), "load_average": os.getloadavg()[0]})
            print(f"overhead {scale} rep {rep} {tool}: step {runs[-1]['step_median_s']:.3f} s, run {bench['total_s']:.1f} s, "
                  f"load {runs[-1]['load_average']:.2f}", flush=True)
        result = {"scenario": f"S1 ({S1.name}) {scale}", "steps": len(runs[0]["steps_s"]), "tools": list(tools),
                  "reps": rep + 1, "run": fingerprint(), "runs": runs, "ratios": tool_ratios(runs, tools)}
        if save:
            save(result)
    return result


def tool_ratios(runs: list[dict], tools) -> dict:
    """Each tool's ratios to the bare run of the same repetition, as geometric mean and 95 % interval."""
    bare = {r["rep"]: r for r in runs if r["tool"] == "bare"}
    out = {}
    for tool in tools:
        if tool == "bare":
            continue
        mine = {r["rep"]: r for r in runs if r["tool"] == tool}
        reps = [k for k in bare if k in mine]
        if len(reps) < 2:
            continue
        out[tool] = {"step": interval([mine[k]["step_median_s"] / bare[k]["step_median_s"] for k in reps]),
                     "total": interval([mine[k]["total_s"] / bare[k]["total_s"] for k in reps])}
    return out


def interval(ratios: list[float]) -> dict:
    """Geometric mean of paired ratios and its 95 % t-interval (on the logs)."""
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    half = T95.get(len(logs), 2.0) * statistics.stdev(logs) / math.sqrt(len(logs)) if len(logs) > 1 else float("nan")
    return {"n": len(logs), "geomean": math.exp(mean), "low": math.exp(mean - half), "high": math.exp(mean + half)}


def tree_case(name: str, scenario, rounds: int) -> dict:
    from gpu_budget.isolate import forkserver

    preload = gate_preload()
    assets = Path(tempfile.gettempdir()) / "gpu-budget-bench" / scenario.asset_key("tiny")
    forkserver.prepare_assets(scenario.to_json("tiny"), assets, 1800, THREADS, preload)
    runs = []
    for rnd in range(rounds):
        order = TREE_TOOLS[rnd % len(TREE_TOOLS):] + TREE_TOOLS[:rnd % len(TREE_TOOLS)]
        for tool in order:
            job = scenario.with_params(bench_tool=tool, bench_target=scenario.run).to_json("tiny")
            job["run"] = "benchmarks.overhead:run_under"
            m = forkserver.measure(job, assets, 1800, THREADS, preload)
            if not m.ok:
                raise RuntimeError(f"{tool} {name}: {m['error']}")
            bench = m.info["bench"]
            runs.append({"round": rnd, "tool": tool, "total_s": bench["total_s"], "steps_s": bench["steps_s"],
                         "step_median_s": med(bench["steps_s"][1:]), "load_average": os.getloadavg()[0],
                         "ram_peak": m.peaks["ram"], "ram_tree_peak": m.peaks.get("ram_tree")})
            print(f"overhead tree {name} round {rnd} {tool}: step {runs[-1]['step_median_s']:.3f} s, "
                  f"run {bench['total_s']:.1f} s, load {runs[-1]['load_average']:.2f}", flush=True)
    ratios = {}
    for tool in TREE_TOOLS[1:]:
        by_round = {r["round"]: r for r in runs if r["tool"] == tool}
        bare = {r["round"]: r for r in runs if r["tool"] == "bare"}
        ratios[tool] = {"step": interval([by_round[k]["step_median_s"] / bare[k]["step_median_s"] for k in bare]),
                        "total": interval([by_round[k]["total_s"] / bare[k]["total_s"] for k in bare])}
    return {"case": name, "steps": len(runs[0]["steps_s"]), "runs": runs, "ratios": ratios}


def tree_part(rounds: int) -> dict:
    from s1_wav2vec2.scenarios import S1, WORKERS

    cases = [tree_case("S1 tiny, 4 DataLoader workers, dataset in memory (memtests/test_s1_workers.py, 12 steps)",
                       WORKERS.with_params(max_steps=12), rounds),
             tree_case("S1 tiny, no workers", S1, rounds)]
    return {"run": fingerprint(), "threads": THREADS, "tools": list(TREE_TOOLS), "rounds": rounds, "cases": cases}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="runs per tool at tiny scale")
    parser.add_argument("--real-reps", type=int, default=3, help="runs per tool at real scale")
    parser.add_argument("--scales", default="tiny,real")
    parser.add_argument("--part", choices=("all", "tools", "tree"), default="all")
    parser.add_argument("--rounds", type=int, default=8, help="rounds of the tree part (one run per tool each)")
    parser.add_argument("--tools", default=",".join(TOOLS), help="tools measured (bare always)")
    args = parser.parse_args()
    tools = tuple(t for t in TOOLS if t == "bare" or t in args.tools.split(","))
    if args.part == "tree":  # keep the tools' results, replace the tree part's
        previous = json.loads((RESULTS / "overhead.json").read_text())
        previous["tree"] = tree_part(args.rounds)
        (RESULTS / "overhead.json").write_text(json.dumps(previous, indent=1) + "\n")
        return
    path = RESULTS / "overhead.json"
    previous = json.loads(path.read_text()) if path.exists() else {}
    out = dict(previous.get("scales", {}))

    def save(scale, result):
        out[scale] = result
        kept = {"tree": previous["tree"]} if "tree" in previous else {}
        write("overhead", {"threads": THREADS, "tools": list(TOOLS), "scales": out, **kept})

    for scale in args.scales.split(","):
        measure(scale, args.reps if scale == "tiny" else args.real_reps, tools, lambda r, s=scale: save(s, r))
    if args.part == "all":
        previous = json.loads(path.read_text())
        previous["tree"] = tree_part(args.rounds)
        path.write_text(json.dumps(previous, indent=1) + "\n")


# -- RESULTS.md section 2, from this script's JSON (benchmarks/report.py joins the sections) -------------------------

def _order(res: dict) -> str:
    """How the tools were ordered within the repetitions: rotated, or the same each time."""
    orders = defaultdict(list)
    for r in res["runs"]:
        orders[r["rep"]].append(r["tool"])
    return "rotated" if len({tuple(o) for o in orders.values()}) > 1 else "fixed"


def overhead_ratios(ov: dict) -> dict:
    """scale -> tool -> medians, and the ratios to the same repetition's bare run (geometric mean, 95 % interval)."""
    out = {}
    for scale, res in ov["scales"].items():
        per = defaultdict(lambda: {"step": [], "total": [], "ram": []})
        bare = {r["rep"]: r for r in res["runs"] if r["tool"] == "bare"}
        ratios = defaultdict(lambda: {"step": [], "total": []})
        for r in res["runs"]:
            per[r["tool"]]["step"].append(r["step_median_s"])
            per[r["tool"]]["total"].append(r["total_s"])
            per[r["tool"]]["ram"].append(r.get("ram_peak"))
            if r.get("rep") in bare:
                ratios[r["tool"]]["step"].append(r["step_median_s"] / bare[r["rep"]]["step_median_s"])
                ratios[r["tool"]]["total"].append(r["total_s"] / bare[r["rep"]]["total_s"])
        out[scale] = {t: {"step": med(v["step"]), "total": med(v["total"]), "n": len(v["step"]),
                          "ram": med(v["ram"]) if None not in v["ram"] else None,
                          "step_iv": interval(ratios[t]["step"]) if t != "bare" and len(ratios[t]["step"]) > 1 else None,
                          "total_iv": interval(ratios[t]["total"]) if t != "bare" and len(ratios[t]["total"]) > 1 else None}
                      for t, v in per.items()}
    return out


def _iv(iv: dict | None, digits: int = 2) -> str:
    return "-" if iv is None else f"{iv['geomean']:.{digits}f}x ({iv['low']:.{digits}f} .. {iv['high']:.{digits}f})"


def section(ov: dict | None) -> list[str]:
    """Section 2 from overhead.json: each tool's step time against bare, per scale, and the tree's cost."""
    out = ["## 2. Overhead on a real training step", ""]
    if ov is None:
        return out + missing("overhead", "overhead")
    names = {"bare": "bare (a stopwatch only)", "meter": "this meter",
             "tensors": "this meter + the tensor-bytes counter (the gate on CPU)",
             "tracker": "TrainerMemoryTracker sampler", "memray": "memray tracking (pytest-memray's settings)"}
    out += [(f"S1's runner (wav2vec2, the real `Trainer`) in a gate child, {ov['threads']} torch thread, one run per "
             f"tool in each repetition (`benchmarks/overhead.py`). Step time: the median over optimizer steps 2+ of one "
             f"run. *Vs bare* is the ratio to the bare run of the same repetition: the table gives the geometric mean of "
             f"those ratios over the repetitions and its 95 % interval (t on the logs); an interval that holds 1.00x "
             f"means the tool's cost is within this machine's noise. Host RAM: the child's peak (median)."), ""]
    for scale, tools in overhead_ratios(ov).items():
        res = ov["scales"][scale]
        loads = [r["load_average"] for r in res["runs"] if "load_average" in r]
        order = ("in an order rotated each repetition" if _order(res) == "rotated"
                 else "in the same order every repetition (" + ", ".join(t for t in ov["tools"] if t in tools) + ")")
        out += [f"**{res['scenario']}** ({res['steps']} optimizer steps per run; {_order_reps(res)} repetitions {order})",
                "", ran(res if "run" in res else ov)
                + (f" 1-minute load average during the runs {min(loads):.2f} .. {max(loads):.2f}." if loads else ""), "",
                ("| tool | runs | step (median) | step vs bare (geomean, 95 % interval) | whole run (median) | "
                 "whole run vs bare (geomean, 95 % interval) | host RAM peak |"),
                "|---|---|---|---|---|---|---|"]
        for tool in ov["tools"]:
            if tool not in tools:
                continue
            t = tools[tool]
            ram = f"{t['ram'] / MIB:.1f} MiB" if t.get("ram") else "-"
            step_iv, total_iv = ("1.00x", "1.00x") if tool == "bare" else (_iv(t["step_iv"]), _iv(t["total_iv"]))
            out.append(f"| {names[tool]} | {t['n']} | {t['step']:.3f} s | {step_iv} | {t['total']:.1f} s | "
                       f"{total_iv} | {ram} |")
        out.append("")
    return out + tree_overhead(ov.get("tree"))


def _order_reps(res: dict) -> int:
    return len({r["rep"] for r in res["runs"]})


def tree_overhead(tree: dict | None) -> list[str]:
    """The process tree's reading, timed: ratios to bare per round, as an interval."""
    if tree is None:
        return ["_The process-tree timing is not run yet: `python -m benchmarks.overhead --part tree`._", ""]
    names = {"meter-no-tree": "the meter, main process only", "meter": "the meter reading the process tree"}
    loads = [r["load_average"] for c in tree["cases"] for r in c["runs"]]
    out = ["### Reading the process tree", "",
           ran(tree) + f" 1-minute load average during the runs {min(loads):.2f} .. {max(loads):.2f}.", "",
           (f"Each case runs {tree['rounds']} rounds of one run per tool (bare: a stopwatch; the meter with its tree "
            f"thread stopped; the meter as the gate runs it), the order rotating from round to round, in gate children "
            f"({tree['threads']} torch thread; the workers take what the 2 cores leave). A round's ratios are to its own "
            f"bare run; the table gives their geometric mean and 95 % interval (t on the logs; `benchmarks/overhead.py`)."),
           "", "| case | tool | step vs bare (geomean, 95 % interval) | whole run vs bare | step, median of runs |",
           "|---|---|---|---|---|"]
    for case in tree["cases"]:
        bare = med([r["step_median_s"] for r in case["runs"] if r["tool"] == "bare"])
        out.append(f"| {case['case']} | bare | 1.00x | 1.00x | {bare:.3f} s |")
        for tool, r in case["ratios"].items():
            step, total = r["step"], r["total"]
            own = med([x["step_median_s"] for x in case["runs"] if x["tool"] == tool])
            out.append(f"| | {names[tool]} | {step['geomean']:.3f}x ({step['low']:.3f} .. {step['high']:.3f}) | "
                       f"{total['geomean']:.3f}x ({total['low']:.3f} .. {total['high']:.3f}) | {own:.3f} s |")
    return out + [""]


def headline(ov: dict | None) -> list[str]:
    """The headline's lines for section 2: each tool's step time against bare, per scale and per tree case."""
    if not ov:
        return []
    out = []
    for scale, tools in overhead_ratios(ov).items():
        parts = ", ".join(f"{t} {_iv(tools[t]['step_iv'])}" for t in ("meter", "tensors", "tracker", "memray") if t in tools)
        res = ov["scales"][scale]
        out.append(f"- Step time vs bare, S1 {scale} ({_order_reps(res)} repetitions, {_order(res)} order; geomean, "
                   f"95 % interval): {parts}.")
    for case in (ov.get("tree") or {}).get("cases", []):
        r = case["ratios"]["meter"]["step"]
        out.append(f"- Step time vs bare, {case['case']}: the meter reading the tree {r['geomean']:.3f}x "
                   f"(95 % interval {r['low']:.3f} .. {r['high']:.3f}).")
    return out


if __name__ == "__main__":
    main()
