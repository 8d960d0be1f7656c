"""Section 1, spike fidelity: planted spikes seen by this project's meter and by the alternatives.

Every tool sees the same planted spikes (benchmarks/spikes.py: numpy and
torch, 16/64/512 MiB, held 1/10/100 ms, each `--reps` times), each tool in its
own fresh process so no tool's thread disturbs another's: the meter, a psutil
thread at 10 ms, transformers' TrainerMemoryTracker, and pytest-memray's
limit_memory (the tests in spikes_memray.py). Error = seen - planted; a spike
counts as missed when a tool saw less than half of it. Also draws the RSS
timeline of a few spikes (timeline.py).

The tree part (benchmarks/tree_spikes.py) plants 64 and 512 MiB spikes held 10
and 100 ms in 1, 2 and 4 worker processes (fork and spawn, persistent or
started and gone within the phase) and compares the ways of reading a process
tree; it is stored under "tree" in the same JSON, with its own run fingerprint,
and `--part tree` re-runs it alone, keeping the single-process results.

    python -m benchmarks.fidelity [--reps 10] [--tree-reps 10] [--part all|single|tree]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from benchmarks.common import MIB, RESULTS, ROOT, fingerprint, med, missing, ran, write
from benchmarks.spikes import plan

TOOLS = ("meter", "psutil", "tracker")


def in_process_tool(tool: str, reps: int, tmp: Path) -> list[dict]:
    out = tmp / f"{tool}.json"
    subprocess.run([sys.executable, "-m", "benchmarks.spikes", "--tool", tool, "--reps", str(reps), "--json", str(out)],
                   cwd=ROOT, check=True)
    return json.loads(out.read_text())


def memray_tool(reps: int, tmp: Path) -> list[dict]:
    """Run spikes_memray.py under pytest --memray; the peak limit_memory compares, and its verdict, per test."""
    from memray import FileReader

    bins, junit = tmp / "memray-bins", tmp / "memray-junit.xml"
    cmd = [sys.executable, "-m", "pytest", "benchmarks/spikes_memray.py", "--memray", "--memray-bin-path", str(bins),
           "--hide-memray-summary", "-p", "no:cacheprovider", "-q", "--junitxml", str(junit)]
    proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "BENCH_SPIKE_REPS": str(reps)}, capture_output=True, text=True,
                          check=False)
    if proc.returncode not in (0, 1):  # 1: some spikes passed under their limit (misses), which is data
        raise RuntimeError(f"pytest-memray run failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    failed = {case.get("name") for case in ET.parse(junit).getroot().iter("testcase") if case.find("failure") is not None}
    rows = []
    for meta in sorted((bins / "metadata").glob("*.metadata")):
        info = json.loads(meta.read_text())
        test = info["test_id"].rsplit("::", 1)[-1]  # test_spike[numpy-512-10-3]
        kind, size, ms, rep = test[test.index("[") + 1:-1].split("-")
        records = FileReader(info["result_file"]).get_high_watermark_allocation_records(merge_threads=True)
        rows.append({"kind": kind, "mib": int(size), "ms": int(ms), "rep": int(rep), "tool": "memray",
                     "seen": int(sum(r.size for r in records)), "limit_memory_failed": test in failed})
        Path(info["result_file"]).unlink()  # a .bin per spike: keep only the numbers
    if len(rows) != len(plan(reps)):
        raise RuntimeError(f"pytest-memray gave {len(rows)} results for {len(plan(reps))} spikes:\n{proc.stdout[-3000:]}")
    return rows


def summarize(rows: list[dict]) -> list[dict]:
    """Per tool and spike shape: mean and worst error in MiB, and misses (saw < half the spike)."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r["tool"], r["kind"], r["mib"], r["ms"])].append(r)
    out = []
    for (tool, kind, size, ms), rs in sorted(groups.items()):
        errors = [r["seen"] / MIB - size for r in rs]
        out.append({"tool": tool, "kind": kind, "mib": size, "ms": ms, "n": len(rs),
                    "mean_error_mib": sum(errors) / len(errors),
                    "mean_abs_error_mib": sum(abs(e) for e in errors) / len(errors),
                    "worst_error_mib": max(errors, key=abs),
                    "missed": sum(r["seen"] < size * MIB / 2 for r in rs)})
    return out


def tree_part(reps: int, tmp: Path) -> dict:
    """The spikes in worker processes, in a process of their own (it plays the measured child)."""
    out = tmp / "tree.json"
    subprocess.run([sys.executable, "-m", "benchmarks.tree_spikes", "--reps", str(reps), "--json", str(out)],
                   cwd=ROOT, check=True)
    return {"run": fingerprint(), "reps": reps, **json.loads(out.read_text())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--tree-reps", type=int, default=10)
    parser.add_argument("--part", choices=("all", "single", "tree"), default="all")
    args = parser.parse_args()
    if args.part == "tree":  # keep the single-process results, replace the tree's
        previous = json.loads((RESULTS / "fidelity.json").read_text())
        with tempfile.TemporaryDirectory(prefix="bench-fidelity-") as tmp:
            previous["tree"] = tree_part(args.tree_reps, Path(tmp))
        (RESULTS / "fidelity.json").write_text(json.dumps(previous, indent=1) + "\n")
        return
    with tempfile.TemporaryDirectory(prefix="bench-fidelity-") as tmp:
        rows = []
        for tool in TOOLS:
            print(f"fidelity: {tool} ...", flush=True)
            rows += in_process_tool(tool, args.reps, Path(tmp))
        print("fidelity: pytest-memray limit_memory ...", flush=True)
        rows += memray_tool(args.reps, Path(tmp))
        print("fidelity: timeline ...", flush=True)
        out = Path(tmp) / "timeline.json"
        subprocess.run([sys.executable, "-m", "benchmarks.timeline", "--json", str(out)], cwd=ROOT, check=True)
        picture = json.loads(out.read_text())
        tree = tree_part(args.tree_reps, Path(tmp)) if args.part == "all" else None
    write("fidelity", {"reps": args.reps, "summary": summarize(rows), "rows": rows, "timeline": picture,
                       **({"tree": tree} if tree else {})})


# -- RESULTS.md section 1, from this script's JSON (benchmarks/report.py joins the sections) -------------------------

PNG = ROOT / "benchmarks" / "spike-timeline.png"


TOOL_NAMES = {"meter": "this meter (VmHWM)", "psutil": "psutil thread, 10 ms",
              "tracker": "TrainerMemoryTracker (busy loop)", "memray": "pytest-memray limit_memory"}


def tool_totals(fid: dict) -> dict:
    """Per tool over every planted spike: mean |error|, worst error, misses."""
    out = {}
    for tool in TOOL_NAMES:
        rows = [r for r in fid["rows"] if r["tool"] == tool]
        if rows:
            errors = [r["seen"] / MIB - r["mib"] for r in rows]
            out[tool] = {"n": len(rows), "mean_abs": sum(map(abs, errors)) / len(errors), "worst": max(errors, key=abs),
                         "missed": sum(r["seen"] < r["mib"] * MIB / 2 for r in rows)}
    return out


def section(fid: dict | None) -> list[str]:
    """Section 1 from fidelity.json: each tool's error on planted spikes, and the spike timeline PNG."""
    out = ["## 1. Spike fidelity", ""]
    if fid is None:
        return out + missing("fidelity", "fidelity")
    totals = tool_totals(fid)
    out += [ran(fid), "",
            (f"Planted allocations (numpy `ones`, torch `ones`: every page touched) of 16, 64 and 512 MiB held 1, 10 "
            f"and 100 ms, {fid['reps']} times each, each tool in its own fresh process under the steady allocator "
            f"(`benchmarks/spikes.py`). Error = what the tool saw minus the planted size; a spike is *missed* when a tool "
            f"saw less than half of it. The meter, psutil and the tracker read resident memory (RSS); memray counts "
            f"allocated bytes (it hooks `malloc`), so it is exact on a planted allocation by construction and would also "
            f"count memory that never became resident."), "",
            "| tool | spikes | mean abs error | worst error | missed |", "|---|---|---|---|---|"]
    for tool, t in totals.items():
        out.append(f"| {TOOL_NAMES[tool]} | {t['n']} | {t['mean_abs']:.2f} MiB | {t['worst']:+.2f} MiB | {t['missed']} of {t['n']} |")
    by = {(s["tool"], s["kind"], s["mib"], s["ms"]): s for s in fid["summary"]}
    tools = [t for t in TOOL_NAMES if t in totals]
    out += ["", "Per spike: mean error / worst error (MiB), misses of " + str(fid["reps"]) + ".", "",
            "| spike | ramp (median) | " + " | ".join(TOOL_NAMES[t] for t in tools) + " |",
            "|---|---|" + "---|" * len(tools)]
    ramps = defaultdict(list)
    for r in fid["rows"]:
        if "ramp_ms" in r:
            ramps[(r["kind"], r["mib"])].append(r["ramp_ms"])
    for kind, size, ms in sorted({k[1:] for k in by}, key=lambda k: (k[0], k[1], k[2])):
        cells = []
        for t in tools:
            s = by.get((t, kind, size, ms))
            cells.append("-" if s is None else f"{s['mean_error_mib']:+.2f} / {s['worst_error_mib']:+.2f}, "
                                               f"{'**' if s['missed'] else ''}{s['missed']} missed{'**' if s['missed'] else ''}")
        ramp = f"{med(ramps[(kind, size)]):.0f} ms" if ramps[(kind, size)] else "-"
        out.append(f"| {kind} {size} MiB held {ms} ms | {ramp} | " + " | ".join(cells) + " |")
    out += ["", ("*Ramp*: how long the allocation took to become resident (page faults) before the hold began: a spike "
            "rises for that long, then holds its full size for the stated time."), "", *_meter_note(fid), ""]
    if fid.get("timeline"):
        from benchmarks import timeline

        timeline.draw(fid["timeline"], PNG)
        out += [f"![RSS timeline of planted spikes]({PNG.name})", "",
                ("The RSS timeline of three planted numpy spikes (read by a second process in a tight loop), the points a "
                "10 ms psutil thread sampled, and the meter's reading (dashed). Captured in the same run "
                "(`benchmarks/timeline.py`)."), ""]
    return out


def _meter_note(fid: dict) -> list[str]:
    """What the meter's own errors in this run were, read from the rows."""
    rows = [r for r in fid["rows"] if r["tool"] == "meter"]
    errors = [(r["seen"] / MIB - r["mib"], r) for r in rows]
    under = min(e for e, _ in errors)
    over, first = max(errors, key=lambda x: x[0])
    return [(f"The meter's readings lay between {under:+.2f} and {over:+.2f} MiB of the planted size; its largest over-read "
            f"was the {first['kind']} {first['mib']} MiB spike of repetition {first['rep']} (the phase holds everything the "
            f"process allocated meanwhile, e.g. a library's first-use buffers).")]


def headline(fid: dict | None) -> list[str]:
    """The headline's lines for section 1: the meter's spike error beside each other tool's."""
    if not fid:
        return []
    t = tool_totals(fid)
    ours, out = t["meter"], []
    for tool in ("psutil", "tracker", "memray"):
        if tool in t:
            o = t[tool]
            out.append(f"- Spike error, this meter vs {TOOL_NAMES[tool]}: mean |error| {ours['mean_abs']:.2f} vs "
                       f"{o['mean_abs']:.2f} MiB, worst {ours['worst']:+.2f} vs {o['worst']:+.2f} MiB, missed "
                       f"{ours['missed']} vs {o['missed']} of {o['n']}.")
    return out


if __name__ == "__main__":
    main()
