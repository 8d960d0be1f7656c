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

from benchmarks.common import MIB, RESULTS, ROOT, fingerprint, write
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


if __name__ == "__main__":
    main()
