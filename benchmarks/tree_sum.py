"""Section 1c, processes that never coexist: the tree figure is the peak over time of the summed tree.

Seven cases (benchmarks/tree_sum_cases.py), each measured through the gate's own code two ways:

  command  the case as a user's script, Scenario(command=[python, tree_sum_cases.py, CASE, ...]) measured by
           isolate.measure in a forkserver child with the gate's preload (command.py: the script's process is
           the main one, counted in full; `ram_tree` is the peak of the summed tree alone);
  meter    the case called in-process under a Meter (the runner mode: a fresh process of its own plays the
           measured child, `ram_tree` = its own VmHWM + the peak of its descendants' summed private figures; not
           this process, whose forkserver would be one of its descendants).

    sequential   10 subprocesses one after another, 300..400 MiB each: gate figure within 1.05x of the truth
    concurrent   2 forked DataLoader workers holding 300 MiB each together: gate figure >= 0.95x the truth, and
                 what the tree added over the main process >= 0.95x the workers' sum
    spike        a 400 MiB spike held 50 ms in a shell-out: counted, within 5 MiB of the truth
    per_epoch    persistent_workers=False, 3 epochs of 2 workers x 200 MiB: one epoch's workers, not three
                 (within 1.05x of the truth, and the tree's addition under 1.5 epochs' workers)
    idle_worker  a forked worker that only waits while the parent rewrites the 300 MiB it inherited: both
                 copies, within 1.05x of the truth (the worker's pages became its own with no fault of its own)
    shm_readers  2 forked readers of a 300 MiB shared-memory segment: the segment once, within 1.05x
    queued       a DataLoader's queue full: 8 batches of 32 MiB in flight, in shared memory no process maps,
                 counted (held_tmpfs.py), within 1.05x

Truth (tree_sum_cases.py's docstring): the processes read it of themselves; for each group of children
alive together, the main process's RSS around them + the children's USS while they hold; the largest group.
Beside the gate's figure each row keeps the loose upper bound the phase record holds: the sum of every
process's own peak (TreeReading.peak_sum; + the main process's VmHWM in the meter mode, where the main
process is not in the tree reading), which is what the tree figure was before it became a peak over time.

    python -m benchmarks.tree_sum [--reps 10] [--modes command,meter] [--cases sequential,...]
    python -m benchmarks.tree_sum --cases queued --add    # these cases' rows replaced in the committed report
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import MIB, RESULTS, ROOT, THREADS, fingerprint, gate_preload, med, missing, ran, span, write

CASES = ("sequential", "concurrent", "spike", "per_epoch", "idle_worker", "shm_readers", "queued")
MODES = ("command", "meter")
SCRIPT = Path(__file__).resolve().parent / "tree_sum_cases.py"
TIMEOUT_S = 300
# case -> (kind, bound) on the gate's figure against the truth: "within": ratio in [1/bound, bound]; "at_least":
# ratio >= bound, and the same for what the tree added over the main process (the workers' part alone); "mib":
# |figure - truth| <= bound MiB; "not_tripled": within 1.05x, and what the tree added below 1.5x one group's children
THRESHOLDS = {"sequential": ("within", 1.05), "concurrent": ("at_least", 0.95), "spike": ("mib", 5.0),
              "per_epoch": ("not_tripled", 1.05), "idle_worker": ("within", 1.05), "shm_readers": ("within", 1.05),
              "queued": ("within", 1.05)}


def truth(facts: dict) -> dict:
    """The true peak of the tree from what its processes read of themselves: the largest group's main RSS + USS."""
    sums = [g["main_rss"] + sum(c["uss"] for c in g["children"]) for g in facts["groups"]]
    biggest = max(range(len(sums)), key=sums.__getitem__)
    group = facts["groups"][biggest]
    return {"truth": sums[biggest], "truth_main": group["main_rss"],
            "truth_children": sum(c["uss"] for c in group["children"]),
            "children_total": sum(c["uss"] for g in facts["groups"] for c in g["children"])}


def passes(case: str, row: dict) -> bool:
    kind, bound = THRESHOLDS[case]
    ratio, added = row["ratio"], row["added_ratio"]
    if kind == "within":
        return 1 / bound <= ratio <= bound
    if kind == "at_least":
        return ratio >= bound and added >= bound
    if kind == "not_tripled":
        return 1 / bound <= ratio <= bound and added < 1.5
    return abs(row["ram_tree"] - row["truth"]) <= bound * MIB


def _row(case: str, mode: str, rep: int, facts: dict, ram: int, ram_tree: int, tree: dict, seconds: float) -> dict:
    t = truth(facts)
    loose = tree["peak_sum"] + (0 if mode == "command" else ram)
    row = {"case": case, "mode": mode, "rep": rep, **t, "ram": ram, "ram_tree": ram_tree, "loose": loose,
           "peak_sum": tree["peak_sum"], "ratio": ram_tree / t["truth"], "loose_ratio": loose / t["truth"],
           # what the tree added over the main process, in units of the largest group's children (1: one group)
           "added_ratio": (ram_tree - t["truth_main"]) / t["truth_children"],
           "loose_added_ratio": (loose - t["truth_main"]) / t["truth_children"],
           "error_mib": (ram_tree - t["truth"]) / MIB, "seconds": round(seconds, 2),
           "load_average": round(os.getloadavg()[0], 2), "facts": facts,
           "tree": {k: v for k, v in tree.items() if k != "detail"}}
    row["passed"] = passes(case, row)
    return row


def command_case(case: str, rep: int, tmp: Path) -> dict:
    """The case as a user's script, measured by the gate's command path in a forkserver child."""
    from gpu_budget import Scenario
    from gpu_budget.isolate.forkserver import measure

    out = tmp / f"{case}-{rep}.json"
    scenario = Scenario(name=f"tree-sum-{case}", command=[sys.executable, str(SCRIPT), case, str(out), str(rep)])
    t0 = time.perf_counter()
    m = measure(scenario.to_json("tiny"), tmp / "assets", TIMEOUT_S, THREADS, preload=gate_preload())
    seconds = time.perf_counter() - t0
    if not m.ok:
        raise RuntimeError(f"{case}: the command case failed: {m.error}")
    (phase,) = m.phases.values()  # the script marks no phase: one "run"
    return _row(case, "command", rep, json.loads(out.read_text()), m.peaks.ram, m.peaks.ram_tree, phase.tree.to_json(),
                seconds)


def meter_case(meter, case: str, rep: int) -> dict:
    """The case called in this process, one phase of the Meter around it."""
    from benchmarks import tree_sum_cases as cases

    t0 = time.perf_counter()
    meter.start(case)
    facts = cases.CASES[case](rep)
    record = meter.stop()
    return _row(case, "meter", rep, facts, record.ram_peak, record.ram_tree_peak, record.tree.to_json(),
                time.perf_counter() - t0)


def meter_rows(reps: int, cases=CASES) -> list[dict]:
    """The meter mode, in this process (a fresh one: no forkserver or other child of its own in the tree)."""
    import torch

    from gpu_budget.isolate.child import steady_malloc
    from gpu_budget.measure.meter import Meter

    steady_malloc()  # as in a measured child
    torch.set_num_threads(THREADS)
    meter = Meter(use_cuda=False)
    rows = []
    try:
        for rep, case in itertools.product(range(reps), cases):  # interleaved: drift spreads evenly
            rows.append(_said(meter_case(meter, case, rep)))
    finally:
        meter.close()
    return rows


def command_rows(reps: int, cases=CASES) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="bench-tree-sum-") as tmp:
        return [_said(command_case(case, rep, Path(tmp))) for rep, case in itertools.product(range(reps), cases)]


def _said(row: dict) -> dict:
    print(f"tree sum {row['case']} {row['mode']} rep {row['rep']}: truth {row['truth'] / MIB:.1f} MiB, gate "
          f"{row['ram_tree'] / MIB:.1f} ({row['ratio']:.3f}x; added {row['added_ratio']:.3f} group), "
          f"loose {row['loose'] / MIB:.1f} ({row['loose_ratio']:.2f}x), "
          f"{'pass' if row['passed'] else 'FAIL'}, {row['seconds']:.1f} s, load {row['load_average']}", flush=True)
    return row


def run(reps: int, modes=MODES, cases=CASES) -> list[dict]:
    """The meter mode first, in a process of its own (this one starts the forkserver, a child the tree would
    count), then the command mode here."""
    rows = []
    if "meter" in modes:
        with tempfile.TemporaryDirectory(prefix="bench-tree-sum-meter-") as tmp:
            out = Path(tmp) / "meter.json"
            subprocess.run([sys.executable, "-m", "benchmarks.tree_sum", "--in-process", str(out), "--reps", str(reps),
                            "--cases", ",".join(cases)], cwd=ROOT, check=True)
            rows += json.loads(out.read_text())
    if "command" in modes:
        rows += command_rows(reps, cases)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--json", type=Path, default=None, help="write here instead of benchmarks/results/tree_sum.json")
    parser.add_argument("--add", action="store_true",
                        help="put the rows of --cases in the report in place of theirs, keeping its other rows")
    parser.add_argument("--in-process", type=Path, default=None, help=argparse.SUPPRESS)  # the meter mode's rows
    args = parser.parse_args()
    if args.in_process:
        args.in_process.write_text(json.dumps(meter_rows(args.reps, args.cases.split(","))))
        return
    t0 = time.perf_counter()
    rows = run(args.reps, args.modes.split(","), args.cases.split(","))
    wall = round(time.perf_counter() - t0, 1)
    if args.add:
        add(args.json or RESULTS / "tree_sum.json", args.cases.split(","), rows, wall)
        return
    write("tree_sum", {"reps": args.reps, "thresholds": THRESHOLDS, "threads": THREADS, "wall_seconds": wall,
                       "rows": rows}, args.json)


def add(path: Path, cases: list[str], rows: list[dict], wall: float) -> None:
    """Put `rows` (of `cases`, run now) in the report at `path` in place of those cases' rows; its other rows and its
    run stay as they were, and this run is kept under "added" with the cases it measured."""
    old = json.loads(path.read_text())
    kept = [r for r in old["rows"] if r["case"] not in cases]
    added = [a for a in old.get("added", []) if not set(a["cases"]) <= set(cases)]
    added.append({"cases": cases, "run": fingerprint(), "wall_seconds": wall})
    write("tree_sum", {**{k: v for k, v in old.items() if k != "section"}, "thresholds": THRESHOLDS, "added": added,
                       "rows": kept + rows}, path)


# -- RESULTS.md section 1c, from this script's JSON (benchmarks/report.py joins the sections) ------------------------

TREE_SUM_CASES = {
    "sequential": "10 sequential subprocesses, 300-400 MiB each, held 0.2 s",
    "concurrent": "2 forked DataLoader workers, 300 MiB each, held together",
    "spike": "a 400 MiB spike held 50 ms in a shell-out",
    "per_epoch": "per-epoch DataLoader workers: 3 epochs x 2 workers x 200 MiB",
    "idle_worker": "an idle forked worker; the parent rewrites the 300 MiB it inherited",
    "shm_readers": "2 forked readers of a 300 MiB shared-memory segment, held together",
    "queued": "a DataLoader's queue full: 2 workers x 4 batches of 32 MiB in flight",
}


TREE_SUM_MODES = {"command": "command case", "meter": "Meter in-process"}


def _threshold(kind: str, bound: float) -> str:
    return {"within": f"within {bound:.2f}x", "at_least": f">= {bound:.2f}x, and its addition >= {bound:.2f}x the workers",
            "mib": f"within {bound:.0f} MiB", "not_tripled": f"within {bound:.2f}x, its addition < 1.5 epochs"}[kind]


def tree_sum_groups(ts: dict) -> list[dict]:
    """Per case and mode: medians of truth, gate and loose bound; ranges of the ratios; runs passed."""
    out = []
    for case in TREE_SUM_CASES:
        for mode in TREE_SUM_MODES:
            rs = [r for r in ts["rows"] if r["case"] == case and r["mode"] == mode]
            if not rs:
                continue
            out.append({"case": case, "mode": mode, "n": len(rs), "passed": sum(r["passed"] for r in rs),
                        "truth": med([r["truth"] for r in rs]) / MIB, "gate": med([r["ram_tree"] for r in rs]) / MIB,
                        "loose": med([r["loose"] for r in rs]) / MIB, "ratios": [r["ratio"] for r in rs],
                        "added": [r["added_ratio"] for r in rs], "loose_ratio": med([r["loose_ratio"] for r in rs]),
                        "loose_added": med([r["loose_added_ratio"] for r in rs]),
                        "errors": [r["error_mib"] for r in rs], "seconds": [r["seconds"] for r in rs],
                        "loads": [r["load_average"] for r in rs]})
    return out


def tree_sum_table(ts: dict) -> list[str]:
    """Section 1c's table, per case and mode (docs/process-tree.md quotes it)."""
    out = [("| case | mode | runs | truth, median | gate's figure `ram_tree`, median | gate / truth (min .. max) | "
            "added, in groups (min .. max) | loose bound, median | loose / truth, median (added, in groups) | "
            "threshold | passed |"),
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for g in tree_sum_groups(ts):
        kind, bound = ts["thresholds"][g["case"]]
        out.append(f"| {TREE_SUM_CASES[g['case']]} | {TREE_SUM_MODES[g['mode']]} | {g['n']} | {g['truth']:.1f} MiB | "
                   f"{g['gate']:.1f} MiB | {span(g['ratios'], '.3f')}x | {span(g['added'], '.3f')} | "
                   f"{g['loose']:.1f} MiB | {g['loose_ratio']:.2f}x ({g['loose_added']:.2f}) | {_threshold(kind, bound)} | "
                   f"{g['passed']} of {g['n']} |")
    return out


def section(ts: dict | None) -> list[str]:
    """Section 1c from tree_sum.json: the gate's tree figure against each case's truth."""
    out = ["## 1c. Processes that never coexist: the peak of the summed tree", ""]
    if ts is None:
        return out + missing("tree_sum", "tree_sum")
    groups = tree_sum_groups(ts)
    loads = [x for g in groups for x in g["loads"]]
    out += [ran(ts) + f" 1-minute load average during the runs {min(loads):.2f} .. {max(loads):.2f}.", "",
            *[f"Added later, run alone ({', '.join(a['cases'])}): {ran(a)}" for a in ts.get("added", [])],
            *([""] if ts.get("added") else []),
            ("The tree figure is the peak over time of the summed tree: every 10 ms each descendant's VmHWM is read and "
             "reset, a window's contributions are summed, and the phase's figure is the largest window sum "
             f"(`docs/process-tree.md`). {len({g['case'] for g in groups})} cases (`benchmarks/tree_sum_cases.py`), each measured through the gate's own "
             "code two ways: as a **command case** (the case is a user's script, `Scenario(command=[python, script])` "
             "measured by `isolate.measure` in a forkserver child with the gate's preload; the script's process is the "
             "main one) and under a **Meter in-process** (the runner mode: a fresh process runs the case inside one phase "
             f"and plays the measured child); {ts['reps']} repetitions of each, interleaved (`benchmarks/tree_sum.py`)."),
            "",
            ("*Truth*: what the processes read of themselves, not the gate: every child reads its own USS (smaps_rollup "
             "Private_Clean + Private_Dirty, the pages no other process maps) while it holds its memory, and the main "
             "process reads its own RSS just before it starts the children and just after they are done (it only waits "
             "meanwhile). For each group of children alive together (one subprocess; one epoch's workers) the true tree is "
             "the main process's RSS + the group's summed USS, shared pages counted once (in the main process); the truth "
             "is the largest group. The DataLoader workers touch their blocks and hold them together (a barrier). "
             "The batches in a DataLoader's queue (`queued`), in shared memory no process maps, count as one more "
             "child whose truth is /dev/shm's own count of the blocks it holds (statvfs), before and after they were made. "
             "*Added*: what the gate's figure adds over the main process's RSS, in units of the largest group's children "
             "(1: one group, as the truth has it). *Loose bound*: the sum of each process's own peak in the phase "
             "(`TreeReading.peak_sum`, + the main process's VmHWM in the runner mode), what the tree figure was before "
             "it became a peak over time."), "",
            *tree_sum_table(ts)]
    by = {(g["case"], g["mode"]): g for g in groups}
    errors = [e for g in groups for e in g["errors"]]
    passed, n = sum(g["passed"] for g in groups), sum(g["n"] for g in groups)
    out += [""]
    seq, epoch = by.get(("sequential", "command")), by.get(("per_epoch", "command"))
    if seq and epoch:
        out += [(f"**{passed} of {n} runs met their threshold**; over all of them the gate's figure lay "
                 f"{min(errors):+.1f} .. {max(errors):+.1f} MiB from the truth. The old figure, the sum of every "
                 f"process's own peak, would have said {seq['loose']:.0f} MiB for the ten sequential subprocesses as a "
                 f"command ({seq['loose_ratio']:.1f}x the truth: it adds {seq['loose_added']:.1f} times the largest subprocess, "
                 f"where one lives at a time) and {epoch['loose']:.0f} MiB for the per-epoch workers "
                 f"({epoch['loose_ratio']:.2f}x: {epoch['loose_added']:.1f} epochs' workers, where one epoch's live at a "
                 f"time); the peak of the summed tree "
                 f"said {seq['gate']:.0f} and {epoch['gate']:.0f} MiB. Where the processes do coexist (the concurrent "
                 f"workers, the shell-out spike) both figures count them in full. The section took "
                 f"{ts['wall_seconds'] / 60:.1f} min."), ""]
    missed = [r for r in ts["rows"] if not r["passed"]]
    if missed:
        out += [("**Runs that missed their threshold**: " + "; ".join(
                    f"{r['case']} ({TREE_SUM_MODES[r['mode']]}) rep {r['rep']}: {r['error_mib']:+.1f} MiB from the truth"
                    for r in missed)
                 + "."), ""]
    return out


def headline(ts: dict | None) -> list[str]:
    """The headline's line for section 1c: processes that never coexist, the tree figure against the true peak."""
    if not ts:
        return []
    by = {(g["case"], g["mode"]): g for g in tree_sum_groups(ts)}
    seq, epoch = by.get(("sequential", "command")), by.get(("per_epoch", "command"))
    if not (seq and epoch):
        return []
    return [(f"- Processes that never coexist (section 1c): ten sequential 300-400 MiB subprocesses, the gate's "
            f"tree figure {span(seq['ratios'], '.3f')}x the true peak (the sum of per-process peaks "
            f"{seq['loose_ratio']:.1f}x); per-epoch DataLoader workers {span(epoch['ratios'], '.3f')}x (the "
            f"sum {epoch['loose_ratio']:.2f}x); {sum(g['passed'] for g in by.values())} of "
            f"{sum(g['n'] for g in by.values())} runs of the {len({case for case, _ in by})} cases within their thresholds.")]


if __name__ == "__main__":
    main()
