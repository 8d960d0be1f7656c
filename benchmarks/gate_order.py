"""Section 6c, the order the tiny gate hands its cases out in: the README's gate at an earlier commit and now, alternating.

xdist's work stealing first splits the collection into one contiguous share
per worker and later moves queued cases to an idle worker, never the last two
a worker holds. memtests/conftest.py hands the launches on several ranks (the
gate's longest cases, collected last) out first. Only the order changes, so
this runs the README's gate command (`pytest --gpu-budget memtests -n 2`) at
REF (a git worktree of it, with this interpreter's packages) and in this tree,
alternately, for --rounds rounds, each session against its own copy of its
tree's baselines, after one session (not counted) that prepares the assets
both then share. Per session: the wall time, each xdist worker's children's
time (their difference is time one worker had no case while the other
measured) and every row's verdict, which must be the same at REF and now.

    python -m benchmarks.gate_order [--ref REF] [--rounds 5]

REF defaults to the commit before memtests/conftest.py was added.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from benchmarks.common import ROOT, med, missing, ran, short_commit, span, write
from benchmarks.overhead import interval
from benchmarks.suite import PARTS, SUMMARY, run_gate, time_split, worktree


def gate(tree: Path, plugin_first: bool, assets: Path) -> dict:
    """One README gate session in `tree` against a copy of its baselines, its prepared assets (checkpoints, clips)
    in `assets`: wall, per-worker time, verdicts."""
    with tempfile.TemporaryDirectory(prefix="bench-gate-order-") as tmp:
        baselines, report = Path(tmp) / "baselines", Path(tmp) / "report.json"
        shutil.copytree(tree / "baselines", baselines)
        load = os.getloadavg()[0]
        _, proc, wall, rows = run_gate(tree, ["memtests", *PARTS["tiny"]], baselines, report, plugin_first,
                                       {"GPU_BUDGET_ASSETS": str(assets)})
    found = SUMMARY.findall(proc.stdout)
    workers = time_split(rows)["workers"]
    return {"wall_s": round(wall, 2), "exit_code": proc.returncode, "load_average_start": round(load, 2),
            "summary": found[-1] if found else proc.stdout.strip()[-300:],
            "workers": workers, "idle_s": round(max(workers.values()) - min(workers.values()), 1) if workers else None,
            "verdicts": {r["nodeid"]: r.get("verdict") for r in rows}}


def measure(ref: str, rounds: int) -> dict:
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-gate-order-tree-") as tmp, worktree(ref, Path(tmp) / "tree") as before:
        assets = Path(tmp) / "assets"  # one folder for both trees, filled by a first session that is not counted
        warm = gate(ROOT, False, assets)
        print(f"gate_order: warm-up (assets prepared): {warm['wall_s']:.1f} s, {warm['summary']}", flush=True)
        for rnd in range(rounds):
            order = ("before", "after") if rnd % 2 == 0 else ("after", "before")
            for which in order:
                run = gate(before if which == "before" else ROOT, which == "before", assets)
                runs.append({"round": rnd, "which": which, **run})
                print(f"gate_order: round {rnd} {which}: {run['wall_s']:.1f} s, idle {run['idle_s']} s, "
                      f"{run['summary']}", flush=True)
                write("gate_order", {"ref": ref, "rounds": rounds, "runs": runs})  # a later crash loses nothing
    return {"ref": ref, "rounds": rounds, "runs": runs}


def default_ref() -> str:
    """The parent of the commit that added memtests/conftest.py (the order's hook): the gate before it."""
    added = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", "memtests/conftest.py"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    if not added:
        raise SystemExit("gate_order: memtests/conftest.py was never committed here; give --ref")
    return f"{added[-1]}~1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default=None, help="the commit before the change (default: see above)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    write("gate_order", measure(short_commit(args.ref or default_ref()), args.rounds))


# -- RESULTS.md section 6c, from this script's JSON ---------------------------------------------------------------------

def _pairs(data: dict) -> list[tuple[dict, dict]]:
    by = {(r["round"], r["which"]): r for r in data["runs"]}
    return [(by[(n, "before")], by[(n, "after")]) for n in range(data["rounds"])
            if (n, "before") in by and (n, "after") in by]


def figures(data: dict) -> dict:
    """The section's figures (docs/benchmarks.md quotes them): per side the wall and idle times, the paired ratio,
    whether every row's verdict matched in every round, and the sessions' outcomes."""
    pairs = _pairs(data)
    sides = {}
    for i, which in enumerate(("before", "after")):
        walls, idle = [p[i]["wall_s"] for p in pairs], [p[i]["idle_s"] for p in pairs]
        sides[which] = {"wall": med(walls), "walls": span(walls, ".1f"), "idle": med(idle), "idles": span(idle, ".1f")}
    after = [a for _, a in pairs]
    sides["after"]["children"] = med([sum(a["workers"].values()) for a in after])  # every child's wall time, summed
    sides["after"]["outside"] = med([a["wall_s"] - max(a["workers"].values()) for a in after])  # start, forkserver, end
    return {"rounds": len(pairs), **sides, "ratio": interval([a["wall_s"] / b["wall_s"] for b, a in pairs]),
            "same": all(b["verdicts"] == a["verdicts"] for b, a in pairs),
            "outcomes": sorted({r["summary"].split(" in ")[0] for r in data["runs"]})}


def section(data: dict | None) -> list[str]:
    out = ["## 6c. The order the tiny gate hands its cases out in", ""]
    if data is None:
        return out + missing("gate_order", "gate_order")
    f = figures(data)
    out += [ran(data), "",
            (f"The README's gate command at `{data['ref']}` (before: the collection's order, the launches on several "
             "ranks last) and at the commit above (after: memtests/conftest.py hands the launches out first), "
             f"alternating, {f['rounds']} rounds, each session against its own copy of its tree's baselines and with "
             "the assets one uncounted session prepared (`benchmarks/gate_order.py`). Idle: the difference of the two "
             "xdist workers' children's time, time one worker had no case while the other measured."), "",
            "| | wall time: median (min .. max) | idle: median (min .. max) |", "|---|---|---|"]
    for which in ("before", "after"):
        side = f[which]
        out.append(f"| {which} | {side['wall']:.1f} s ({side['walls']}) | {side['idle']:.1f} s ({side['idles']}) |")
    ratio = f["ratio"]
    out += ["", (f"After over before, per round: {ratio['geomean']:.3f}x (95 % interval {ratio['low']:.3f} .. "
                 f"{ratio['high']:.3f}). Every row's verdict the same before and after in every round: "
                 f"{'yes' if f['same'] else 'no'}. Every session's outcome: {'; '.join(f['outcomes'])}."), "",
            (f"After, the children's wall times summed to {f['after']['children']:.1f} s per session (median), and "
             f"{f['after']['outside']:.1f} s of each session lay outside the busier worker's children (pytest's start "
             "and collection, each worker's forkserver start, the reports at the end). With neither worker ever idle, "
             f"the gate would still take half that sum plus that time: {f['after']['children'] / 2 + f['after']['outside']:.0f} s "
             "for these cases on this host."), ""]
    return out


if __name__ == "__main__":
    main()
