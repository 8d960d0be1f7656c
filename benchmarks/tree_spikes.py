"""Planted spikes in worker processes, and what each way of reading a process tree's RAM sees of them.

This process plays the measured child: steady allocator, a resident base of
`--base` MiB (the model and data a training process holds when it starts its
DataLoader workers), and a Meter reading the tree. It starts N workers (fork or
spawn), either persistent (started before the phases, alive after them) or per
phase (started inside the phase, exiting inside it right after their spike, as
a non-persistent DataLoader's workers do at an epoch's end). Each worker
touches X MiB (numpy ones) once all N are ready to (a barrier), waits at a
second barrier until all N hold theirs, holds it for the hold time with the
others, frees it. A phase without the spike (same workers, same lifecycle)
comes first; what a method "sees" is its figure for the spike phase minus its
figure for that rest phase. Truth: N x X, since the N spikes coincide (the
tree figure is the peak over time of the summed tree: spikes that never
overlap would add up to less, and benchmarks/tree_sum.py measures that).

Methods, all from the same runs:
  tree      the gate's figure: main VmHWM + the peak over 10 ms windows of the descendants' summed VmHWM less
            their shared pages (gpu_budget.measure.tree)
  hwm_sum   main VmHWM + the sum of each descendant's own VmHWM peak (the same reads, nothing subtracted)
  sampled   a thread sampling main RSS + each descendant's USS (smaps_rollup) every 10 ms, max over the phase
  main      the main process's VmHWM alone (what the gate saw before it read the tree)
At rest (persistent workers, idle) each method's figure is also compared with
main RSS + the workers' USS read while nothing moves: the over-count at rest.

    python -m benchmarks.tree_spikes --json out.json [--reps 5] [--base 256]
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing as mp
import os
import threading
import time
from collections import defaultdict
from pathlib import Path

from benchmarks.common import MIB, med, ran

STARTS = ("fork", "spawn")
LIFETIMES = ("persistent", "per-phase")
WORKERS = (1, 2, 4)
SIZES_MIB = (64, 512)
HOLDS_MS = (10, 100)
METHODS = ("tree", "hwm_sum", "sampled", "main")
SETTLE_S = 0.05
BARRIER_TIMEOUT_S = 120


def plan(reps: int, starts=STARTS, lifetimes=LIFETIMES, workers=WORKERS) -> list[dict]:
    """Every (start, lifetime, workers, size, hold) case `reps` times, interleaved so drift spreads evenly."""
    return [{"start": st, "lifetime": lt, "workers": n, "mib": s, "ms": h, "rep": r}
            for r, st, lt, n, s, h in itertools.product(range(reps), starts, lifetimes, workers, SIZES_MIB, HOLDS_MS)]


def worker(conn, barrier, hold_s: float, once: bool) -> None:
    """Plant a spike of each size received (0: none), tell the parent, and exit after one when `once`.

    The workers touch their blocks together and hold them together: a barrier before the touch, a second once
    every block is resident, then the hold."""
    import numpy as np

    from gpu_budget.isolate.child import steady_malloc

    steady_malloc()
    conn.send("ready")
    while True:
        mib = conn.recv()
        if mib is None:
            return
        if mib:
            barrier.wait(BARRIER_TIMEOUT_S)
            block = np.ones(mib * MIB, dtype=np.uint8)  # ones: every page touched
            barrier.wait(BARRIER_TIMEOUT_S)  # every worker holds its block from here
            time.sleep(hold_s)
            del block
        conn.send("done")
        if once:
            return  # straight to exit: the hardest case for a reader that must catch it before it goes


def _uss(pid: int) -> int:
    total = 0
    with open(f"/proc/{pid}/smaps_rollup") as fh:
        for line in fh:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1]) * 1024
    return total


def _uss_or_0(pid: int) -> int:
    try:
        return _uss(pid)
    except OSError:  # gone
        return 0


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise OSError(f"no VmRSS for {pid}")


class UssSampler:
    """main RSS + each worker's USS, every `interval` s on a thread; max since reset(). Misses what it sleeps through."""

    def __init__(self, interval: float = 0.010) -> None:
        self.interval, self.pids, self.peak, self.samples = interval, [], 0, 0
        self._lock, self._generation = threading.Lock(), 0
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        me = os.getpid()
        while True:
            with self._lock:
                generation, pids = self._generation, list(self.pids)
            total = _rss(me)
            for pid in pids:
                try:
                    total += _uss(pid)
                except OSError:
                    pass
            with self._lock:
                if generation == self._generation:  # a sample begun before reset() belongs to no phase
                    self.peak, self.samples = max(self.peak, total), self.samples + 1
            time.sleep(self.interval)

    def reset(self, pids: list[int]) -> None:
        """Start a phase from one synchronous sample (a tool's figure for a phase it never sampled is its last)."""
        with self._lock:
            self.pids, self.samples, self._generation = list(pids), 0, self._generation + 1
            self.peak = _rss(os.getpid()) + sum(map(_uss_or_0, self.pids))


class Workers:
    def __init__(self, start: str, n: int, hold_s: float, once: bool) -> None:
        ctx = mp.get_context(start)
        self.conns, self.procs = [], []
        barrier = ctx.Barrier(n)  # the N spikes of a phase coincide
        for _ in range(n):
            here, there = ctx.Pipe()
            proc = ctx.Process(target=worker, args=(there, barrier, hold_s, once), daemon=True)
            proc.start()
            there.close()
            self.conns.append(here)
            self.procs.append(proc)
        for conn in self.conns:
            assert conn.recv() == "ready"

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def spike(self, mib: int) -> None:
        for conn in self.conns:
            conn.send(mib)
        for conn in self.conns:
            assert conn.recv() == "done"

    def stop(self) -> None:
        for conn, proc in zip(self.conns, self.procs):
            if proc.is_alive():
                try:
                    conn.send(None)
                except OSError:
                    pass
            proc.join()


def _figures(meter, sampler) -> dict:
    rec = meter.phases[-1]
    return {"tree": rec.ram_tree_peak, "hwm_sum": rec.ram_peak + rec.tree["hwm_sum"], "sampled": sampler.peak,
            "main": rec.ram_peak, "tree_detail": rec.tree.to_json(), "samples": sampler.samples}


def one_case(meter, sampler, case: dict) -> dict:
    """The rest phase and the spike phase of one case; each method's seen increment."""
    hold, once = case["ms"] / 1000, case["lifetime"] == "per-phase"
    figures, at_rest = {}, None
    persistent = None if once else Workers(case["start"], case["workers"], hold, once=False)
    try:
        for name, mib in (("rest", 0), ("spike", case["mib"])):
            time.sleep(SETTLE_S)
            sampler.reset(persistent.pids if persistent else [])
            meter.start(name)
            if persistent:
                persistent.spike(mib)
            else:
                workers = Workers(case["start"], case["workers"], hold, once=True)
                sampler.reset(workers.pids)
                workers.spike(mib)
                workers.stop()  # joins: they exit on their own right after the spike
            meter.stop()
            figures[name] = _figures(meter, sampler)
            if persistent and name == "rest":  # idle workers: the truth at rest is main RSS + their USS
                time.sleep(SETTLE_S)
                at_rest = _rss(os.getpid()) + sum(_uss(pid) for pid in persistent.pids)
    finally:
        if persistent:
            persistent.stop()
    truth = case["workers"] * case["mib"] * MIB
    out = {**case, "truth": truth, "truth_at_rest": at_rest,
           "tree_at_rest": figures["rest"]["tree_detail"], "tree_at_spike": figures["spike"]["tree_detail"],
           "samples": figures["spike"]["samples"]}
    for method in METHODS:
        out[f"seen_{method}"] = figures["spike"][method] - figures["rest"][method]
        out[f"rest_{method}"] = figures["rest"][method]
    return out


def run(reps: int, base_mib: int, **only) -> list[dict]:
    import numpy as np

    from gpu_budget.isolate.child import steady_malloc
    from gpu_budget.measure.meter import Meter

    steady_malloc()
    base = np.ones(base_mib * MIB, dtype=np.uint8)  # what the workers inherit (fork) or do not (spawn)
    meter = Meter(use_cuda=False)
    sampler = UssSampler()
    rows = []
    try:
        for case in plan(reps, **only):
            rows.append(one_case(meter, sampler, case))
            r = rows[-1]
            print(f"tree spikes {case}: tree {(r['seen_tree'] - r['truth']) / MIB:+.1f} MiB, "
                  f"hwm_sum {(r['seen_hwm_sum'] - r['truth']) / MIB:+.1f}, sampled {(r['seen_sampled'] - r['truth']) / MIB:+.1f}",
                  flush=True)
    finally:
        meter.close()
    del base
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--base", type=int, default=256, help="MiB the main process holds before it starts workers")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--starts", default=",".join(STARTS))
    parser.add_argument("--lifetimes", default=",".join(LIFETIMES))
    parser.add_argument("--workers", default=",".join(map(str, WORKERS)))
    args = parser.parse_args()
    rows = run(args.reps, args.base, starts=args.starts.split(","), lifetimes=args.lifetimes.split(","),
               workers=[int(n) for n in args.workers.split(",")])
    args.json.write_text(json.dumps({"base_mib": args.base, "coincide": True, "rows": rows}))


# -- RESULTS.md section 1b, from this script's JSON (benchmarks/report.py joins the sections) ------------------------

TREE_METHODS = {"tree": "the gate's tree figure", "hwm_sum": "sum of VmHWM", "sampled": "sampled main RSS + workers' USS (10 ms)",
                "main": "main process alone"}


def _missed(r: dict, method: str) -> int:
    """Worker spikes a method did not see: what is missing of the truth, in whole spikes, when over half of one."""
    short = r["truth"] - r[f"seen_{method}"]
    return max(0, round(short / (r["mib"] * MIB))) if short > r["mib"] * MIB / 2 else 0


def tree_totals(tree: dict) -> dict:
    """Per method over every case: mean |error|, worst error, spikes missed (of all planted), over-count at rest."""
    out = {}
    for method in TREE_METHODS:
        errors = [(r[f"seen_{method}"] - r["truth"]) / MIB for r in tree["rows"]]
        rest = [(r[f"rest_{method}"] - r["truth_at_rest"]) / MIB for r in tree["rows"] if r.get("truth_at_rest")]
        out[method] = {"n": len(errors), "mean_abs": sum(map(abs, errors)) / len(errors), "worst": max(errors, key=abs),
                       "missed": sum(_missed(r, method) for r in tree["rows"]),
                       "spikes": sum(r["workers"] for r in tree["rows"]),
                       "rest_median": med(rest) if rest else None, "rest_worst": max(rest, key=abs) if rest else None}
    return out


def section(fid: dict | None) -> list[str]:
    """Section 1b from fidelity.json's tree part: worker spikes as each method saw them."""
    out = ["## 1b. Spikes in worker processes (the process tree)", ""]
    tree = (fid or {}).get("tree")
    if tree is None:
        return out + [("_Not run yet: `python -m benchmarks.fidelity --part tree` adds it to "
                      "`benchmarks/results/fidelity.json`._"), ""]
    totals = tree_totals(tree)
    out += [ran(tree), "",
            (f"The process running the Meter plays the measured child: steady allocator, {tree['base_mib']} MiB of its own "
             f"touched before it starts its workers. It starts 1, 2 or 4 worker processes, forked or spawned, either "
             f"*persistent* (started before the phases, alive after them) or *per phase* (started inside the phase, and "
             f"exiting right after their spike, before the phase ends). Each worker touches 64 or 512 MiB (numpy `ones`), "
             f"holds it 10 or 100 ms and frees it; {tree['reps']} repetitions of each case "
             f"(`benchmarks/tree_spikes.py`). {_coincide(tree)} What a method *sees* is its figure for the spike phase "
             f"minus its figure for a phase with the same workers and no spike; the truth is workers x size, since the "
             f"spikes coincide (the tree figure is the peak over time of the summed tree: spikes that never overlap add up "
             f"to less, section 1c). A spike is *missed* when a method "
             f"fell short of the truth by more than half a spike. *Over-count at rest*: a method's figure for the phase "
             f"without spikes, persistent workers, minus main RSS + the workers' USS read while nothing moves."), "",
            "Methods, all read in the same runs:", "",
            ("- **the gate's tree figure** (`ram_tree`): the main process's VmHWM + the largest 10 ms window's sum of the "
            "descendants' VmHWM less their shared pages (`plugin/gpu_budget/measure/tree.py`: each descendant's VmHWM read and reset "
            "every 10 ms, each forked multiprocessing worker reporting its own last window as it exits, every live one read "
            "again at the phase end);"),
            ("- **sum of VmHWM**: the main process's VmHWM + each descendant's own VmHWM peak in the phase, nothing "
            "subtracted (each forked worker also counts the parent's pages it maps);"),
            ("- **sampled**: a thread sampling main RSS + each worker's USS (smaps_rollup, shared pages counted once) every "
            "10 ms, the maximum over the phase;"),
            "- **main process alone**: what the gate read before it read the tree.", "",
            "| method | cases | mean abs error | worst error | spikes missed | over-count at rest (median, worst) |",
            "|---|---|---|---|---|---|"]
    for method, t in totals.items():
        rest = "-" if t["rest_median"] is None else f"{t['rest_median']:+.1f}, {t['rest_worst']:+.1f} MiB"
        out.append(f"| {TREE_METHODS[method]} | {t['n']} | {t['mean_abs']:.2f} MiB | {t['worst']:+.2f} MiB | "
                   f"{t['missed']} of {t['spikes']} | {rest} |")
    groups = defaultdict(list)
    for r in tree["rows"]:
        groups[(r["start"], r["lifetime"], r["workers"], r["mib"], r["ms"])].append(r)
    methods = list(TREE_METHODS)
    out += ["", f"Per case: mean error / worst error (MiB), spikes missed (of workers x {tree['reps']}).", "",
            "| workers | spike | truth | " + " | ".join(TREE_METHODS[m] for m in methods) + " |",
            "|---|---|---|" + "---|" * len(methods)]
    for (start, lifetime, n, size, ms), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != "persistent",
                                                                                       kv[0][2], kv[0][3], kv[0][4])):
        cells = []
        for m in methods:
            errors = [(r[f"seen_{m}"] - r["truth"]) / MIB for r in rs]
            missed = sum(_missed(r, m) for r in rs)
            cells.append(f"{sum(errors) / len(errors):+.1f} / {max(errors, key=abs):+.1f}, "
                         f"{'**' if missed else ''}{missed} missed{'**' if missed else ''}")
        out.append(f"| {n} {start}ed, {lifetime} | {size} MiB held {ms} ms | {n * size} MiB | " + " | ".join(cells) + " |")
    t = totals["tree"]
    out += ["", (f"**The gated metric is the tree figure.** Over all {t['n']} cases its error lay within "
                 f"{t['worst']:+.2f} MiB of the planted total (mean |error| {t['mean_abs']:.2f} MiB), {t['missed']} of "
                 f"{t['spikes']} worker spikes missed, and at rest it sat {t['rest_median']:+.1f} MiB (median) from main RSS "
                 f"+ the workers' USS. The sum of VmHWM sees spikes as well, but at rest it counts the parent's "
                 f"{tree['base_mib']} MiB once more per forked worker ({totals['hwm_sum']['rest_worst']:+.0f} MiB at worst), "
                 f"so it cannot be gated; the sampler misses short spikes; the main process alone sees none."), ""]
    return out


def _coincide(tree: dict) -> str:
    """How the workers' spikes line up in time (the committed runs before the barriers did not say)."""
    if tree.get("coincide"):
        return ("The workers of a phase touch their blocks after a common barrier and hold them together from a second "
                "one, so the phase's spikes coincide.")
    return "The workers of a phase were not synchronised: their spikes may not overlap."


def headline(fid: dict | None) -> list[str]:
    """The headline's line for section 1b: the tree figure's error on worker spikes, beside the other methods."""
    if not (fid and fid.get("tree")):
        return []
    t = tree_totals(fid["tree"])
    return [(f"- Spikes in 1-4 worker processes (fork/spawn, persistent or not), the gate's tree figure: mean |error| "
             f"{t['tree']['mean_abs']:.2f} MiB, worst {t['tree']['worst']:+.2f} MiB, missed {t['tree']['missed']} of "
             f"{t['tree']['spikes']}; the sum of VmHWM over-counts {t['hwm_sum']['rest_worst']:+.0f} MiB at rest; a 10 ms "
             f"sampler missed {t['sampled']['missed']}; the main process alone missed {t['main']['missed']}.")]


if __name__ == "__main__":
    main()
