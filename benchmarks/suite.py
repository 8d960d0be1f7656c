"""Section 6, suite time: the whole tiny CPU gate and the real-scale CPU cases, wall time, as subprocesses.

Runs the README's gate command as a user would and keeps each part's wall time
and its pytest JSON report (benchmarks/results/suite-<part>-<selection>.report.json;
the real-scale reports are what FINDINGS.md's real rows are generated from).
By default the run compares against a temporary copy of baselines/, so nothing
in the repository is written and a case without a baseline is recorded into
the copy, not failed. `--record-new` points it at baselines/ itself: cases
that have a baseline are still compared (never updated), the others are
recorded there, which is how the real-scale CPU baselines are made.

Heavy: the whole machine for minutes to an hour (the real scale holds
wav2vec2-base children of ~15 GiB); run it when the machine is otherwise
quiet. Parts run one after the other; `--append` keeps the parts already in
suite.json (one entry per part and selection), so one scenario module at a
time can be timed without losing the others. `--ref REF` runs the parts at an
earlier commit (a git worktree of it: its memtests, baselines and plugin, this
interpreter's packages), stored as `<part>@REF`: the "before" of a change to
the gate's time, timed on the same machine as the "after".

    python -m benchmarks.suite [--parts tiny,probes,real] [--select memtests/...] [--append] [--record-new] [--ref REF]
    (or: python -m benchmarks.run --only suite)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import RESULTS, ROOT, ran, short_commit, write

PARTS = {
    "tiny": ["--gpu-budget-scale", "tiny", "-n", "2"],  # the README's gate command
    # the same with xdist's default scheduler asked for: the side-by-side for the gate's own choice, work stealing
    "tiny-load": ["--gpu-budget-scale", "tiny", "-n", "2", "--dist", "load"],
    # the probes the gate leaves out (unjudged peak() runs): their notes are FINDINGS.md's
    "probes": ["--gpu-budget-scale", "tiny", "-n", "2", "--gpu-budget-probes", "-m", "gpu_budget_probe"],
    # serial: one multi-GiB case at a time; a 50 s-clip wav2vec2-base child takes minutes, not the default 15
    "real": ["--gpu-budget-scale", "real", "-p", "no:xdist", "--gpu-budget-timeout", "3600", "--gpu-budget-probes"],
}
SUMMARY = re.compile(r"^=* ?(\d+ (?:passed|failed|skipped|errors?|deselected)\b.* in [\d.]+s.*?) ?=*$", re.MULTILINE)


def slug(select: list[str]) -> str:
    """A file-name-safe name for a selection: 'all', or the selected modules' stems joined."""
    if not select:
        return "all"
    return "+".join(re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(s.split("::")[0]).stem + "".join(
        f"__{part}" for part in s.split("::")[1:])).strip("-") for s in select)


def run_part(part: str, select: list[str], record_new: bool, ref: str | None = None) -> dict:
    """Run one part; ref (a short commit) runs it in a worktree of that commit instead of this tree."""
    with tempfile.TemporaryDirectory(prefix=f"bench-suite-{part}-") as tmp, \
            (worktree(ref, Path(tmp) / "tree") if ref else contextlib.nullcontext(ROOT)) as tree:
        if record_new:
            baselines = ROOT / "baselines"
        else:
            baselines = Path(tmp) / "baselines"
            shutil.copytree(tree / "baselines", baselines)
        name = f"{part}@{ref}" if ref else part
        report = RESULTS / f"suite-{name}-{slug(select)}.report.json"
        report.parent.mkdir(parents=True, exist_ok=True)
        report.unlink(missing_ok=True)
        load_start, started = os.getloadavg()[0], time.strftime("%Y-%m-%d %H:%M")
        cmd, proc, wall, rows = run_gate(tree, [*(select or ["memtests"]), *PARTS[part]], baselines, report,
                                         plugin_first=ref is not None)
        found = SUMMARY.findall(proc.stdout)
    shown = ["pytest", *cmd[3:]]
    shown[shown.index("--gpu-budget-baselines") + 1] = "baselines/" if record_new else "<copy of baselines/>"
    shown[shown.index("--gpu-budget-json") + 1] = str(report.relative_to(ROOT))
    return {"part": name, **({"ref": ref} if ref else {}), "selection": select or ["memtests"], "command": " ".join(shown), "wall_s": wall,
            "exit_code": proc.returncode, "date": started,
            "load_average_start": round(load_start, 2), "load_average_end": round(os.getloadavg()[0], 2),
            "summary": found[-1] if found else "(no pytest summary line: " + proc.stdout.strip()[-300:] + ")",
            "cases": [{"nodeid": r.get("nodeid"), "label": r.get("label"), "verdict": r.get("verdict"),
                       "wall_s": r.get("wall_seconds"), "ram": (r.get("peaks") or {}).get("ram"),
                       "ram_tree": (r.get("peaks") or {}).get("ram_tree")} for r in rows],
            "time": time_split(rows)}


def run_gate(tree: Path, args: list[str], baselines: Path, report: Path, plugin_first: bool = False,
             env: dict[str, str] | None = None) -> tuple[list[str], subprocess.CompletedProcess, float, list[dict]]:
    """One `pytest --gpu-budget` session in `tree` (CI unset: it would fail cases without a baseline; plugin_first:
    the tree's own plugin ahead of the installed one; `env` added): its command, process, wall seconds, report rows."""
    cmd = [sys.executable, "-m", "pytest", "--gpu-budget", *args, "--gpu-budget-baselines", str(baselines),
           "--gpu-budget-json", str(report), "-p", "no:cacheprovider", "-q"]
    environ = {**{k: v for k, v in os.environ.items() if k != "CI"}, **(env or {})}
    if plugin_first:
        environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree / "plugin"), environ.get("PYTHONPATH")]))
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tree, env=environ, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    rows = json.loads(report.read_text())["results"] if report.exists() else []
    return cmd, proc, wall, rows


@contextlib.contextmanager
def worktree(commit: str, where: Path):
    """A detached git worktree of this repository at commit, removed (and unregistered) on leaving."""
    subprocess.run(["git", "worktree", "add", "--detach", str(where), commit], cwd=ROOT, capture_output=True, check=True)
    try:
        yield where
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(where)], cwd=ROOT, capture_output=True, check=False)


def time_split(rows: list[dict]) -> dict:
    """Where a part's child time went, per scenario module and per xdist worker, from its report's rows.

    Per module: the children's wall time, split into optimizer steps, the other
    phases (load, data, evaluation; a command's start-up before its first mark
    is its phase "run") and the rest (fork, prepare, the child's own set-up and
    teardown). Per worker: the children's wall time each xdist worker ran; their
    difference bounds from below how long one worker had no case while the other measured.
    """
    modules: dict[str, dict] = {}
    workers: dict[str, float] = {}
    for r in rows:
        wall = r.get("wall_seconds")
        if wall is None:
            continue
        phases = list((r.get("phases") or {}).values())
        steps = sum(p["seconds"] for p in phases if p.get("step") is not None)
        other = sum(p["seconds"] for p in phases if p.get("step") is None)
        m = modules.setdefault(r["nodeid"].split("::")[0], {"cases": 0, "child_s": 0.0, "steps_s": 0.0,
                                                            "phases_s": 0.0, "outside_s": 0.0})
        m["cases"] += 1
        m["child_s"] += wall
        m["steps_s"] += steps
        m["phases_s"] += other
        m["outside_s"] += max(0.0, wall - steps - other)
        worker = (r.get("worker") or {}).get("worker", "serial")
        workers[worker] = workers.get(worker, 0.0) + wall
    rounded = {k: {f: round(v, 1) if isinstance(v, float) else v for f, v in m.items()} for k, m in modules.items()}
    return {"modules": rounded, "workers": {k: round(v, 1) for k, v in sorted(workers.items())}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="tiny,probes,real")
    parser.add_argument("--select", default="", help="comma-separated node ids or paths (default: memtests)")
    parser.add_argument("--append", action="store_true", help="keep the other parts already in suite.json")
    parser.add_argument("--remark", action="append", default=[],
                        help="a fact the rows do not show (e.g. two parts run side by side), kept with --append")
    parser.add_argument("--ref", default=None, help="run the parts at this earlier commit (stored as <part>@REF)")
    parser.add_argument("--record-new", action="store_true",
                        help="record cases without a baseline into baselines/ itself (the rest are compared)")
    args = parser.parse_args()
    if args.ref and args.record_new:
        parser.error("--ref runs an earlier commit: its baselines are not recorded into this tree's (drop --record-new)")
    ref = short_commit(args.ref) if args.ref else None  # a branch name pinned in the parts' names
    select = [s for s in args.select.split(",") if s]
    parts, remarks = [], []
    existing = RESULTS / "suite.json"
    if args.append and existing.exists():
        kept = json.loads(existing.read_text())
        parts, remarks = kept["parts"], kept.get("remarks", [])
    remarks += args.remark
    for part in [p for p in args.parts.split(",") if p]:
        print(f"suite: {part} {slug(select)} ...", flush=True)
        new = run_part(part, select, args.record_new, ref)
        parts = [p for p in parts if (p["part"], p.get("selection")) != (new["part"], new["selection"])] + [new]
        print(f"suite: {new['part']} {slug(select)}: {new['wall_s']:.0f} s, {new['summary']}", flush=True)
        write("suite", {"parts": parts, **({"remarks": remarks} if remarks else {})})  # a later crash loses nothing


# -- RESULTS.md section 6, from this script's JSON (benchmarks/report.py joins the sections) -------------------------

def counted_real_parts(su: dict) -> list[dict]:
    """The real parts that count toward the total: all but re-runs of single tests of a module also run whole."""
    real = [p for p in su["parts"] if p["part"] == "real"]
    whole = {s for p in real for s in p.get("selection", []) if "::" not in s}  # modules run whole
    return [p for p in real
            if not all("::" in s and s.split("::")[0] in whole for s in p.get("selection", ["memtests"]))]


def section(su: dict | None) -> list[str]:
    """Section 6 from suite.json: each part's wall time, the real-scale cases, where the tiny gate's time goes."""
    out = ["## 6. Suite time", ""]
    if su is None:
        return out + [("_Not run yet. It takes the whole machine for minutes: run `python -m benchmarks.run --only suite` "
                      "when the machine is otherwise quiet; it writes `benchmarks/results/suite.json`._"), ""]
    out += [ran(su) + " Each part's own start time and load averages are in its row.", "",
            "| part | selection | started | wall time | report rows | outcome | load avg start / end |",
            "|---|---|---|---|---|---|---|"]
    for p in su["parts"]:
        out.append(f"| {p['part']} | {', '.join(p.get('selection', ['memtests']))} | {p.get('date', '')} | "
                   f"{p['wall_s'] / 60:.1f} min | {len(p['cases'])} | {p['summary']} (exit {p['exit_code']}) | "
                   f"{p.get('load_average_start', '')} / {p.get('load_average_end', '')} |")
    real = [p for p in su["parts"] if p["part"] == "real"]
    counted = counted_real_parts(su)
    reruns = [p for p in real if p not in counted]
    if real:
        out += ["", f"Real-scale CPU cases in all: {sum(p['wall_s'] for p in counted) / 60:.0f} min for "
                    f"{sum(len(p['cases']) for p in counted)} measured rows, each module's cases serial (one multi-GiB child "
                    "at a time in a session)"
                    + (f"; not counted: {len(reruns)} re-run of single tests of a module timed whole above." if reruns else "."),
                "",
                "| real-scale case | verdict | child wall time | peak RAM |", "|---|---|---|---|"]
        for p in real:
            for c in p["cases"]:
                ram = f"{c['ram'] / 2**30:.2f} GiB" if c.get("ram") else "-"
                wall = f"{c['wall_s']:.0f} s" if c.get("wall_s") else "-"
                out.append(f"| {c['nodeid']} | {c['verdict']} | {wall} | {ram} |")
    out += gate_time(su)
    if su.get("remarks"):
        out += ["", "What the rows above do not say by themselves:", ""] + [f"- {r}" for r in su["remarks"]]
    out += ["", "The command of each part (reports under `benchmarks/results/`):", ""]
    out += [f"- {p['part']}: `{p['command']}`" for p in su["parts"]]
    return out + [""]


def gate_time(su: dict) -> list[str]:
    """Where each tiny part's time went: children's time per module split by phase, and per xdist worker."""
    timed = [p for p in su["parts"] if p["part"].startswith("tiny") and p.get("time")]
    if not timed:
        return []
    out = ["", "### Where the tiny gate's time goes", "",
           ("Children's wall time from each tiny part's report, summed per scenario module: optimizer steps, the other "
            "phases (load, data, evaluation, a command's start-up before its first mark) and the rest of the child "
            "(fork, prepare, set-up and teardown). The per-worker sums show how evenly xdist shared the cases: the "
            "wall time is at least the larger sum plus the session's start (collection, each worker's forkserver). `tiny` is the README's command (the gate "
            "picks xdist's work-stealing scheduler); `tiny-load` asks for xdist's default `--dist load`, run beside it; "
            "`tiny@<commit>` is the README's command at that earlier commit, on the same machine (the before of a change)."),
           ""]
    for p in timed:
        mods, workers = p["time"]["modules"], p["time"]["workers"]
        total = {f: sum(m[f] for m in mods.values()) for f in ("cases", "child_s", "steps_s", "phases_s", "outside_s")}
        out += [f"{p['part']} ({p['wall_s'] / 60:.1f} min wall):", "",
                "| module | cases | children's time | optimizer steps | other phases | rest of the child |",
                "|---|---|---|---|---|---|"]
        for name, m in sorted(mods.items(), key=lambda kv: -kv[1]["child_s"]):
            out.append(f"| {name} | {m['cases']} | {m['child_s']:.0f} s | {m['steps_s']:.0f} s | {m['phases_s']:.0f} s "
                       f"| {m['outside_s']:.0f} s |")
        out.append(f"| all | {total['cases']} | {total['child_s']:.0f} s | {total['steps_s']:.0f} s "
                   f"({total['steps_s'] / total['child_s']:.0%}) | {total['phases_s']:.0f} s | {total['outside_s']:.0f} s |")
        sums = ", ".join(f"{w} {s:.0f} s" for w, s in workers.items())
        spread = max(workers.values()) - min(workers.values()) if len(workers) > 1 else 0.0
        out += ["", f"Children's time per worker: {sums} (a difference of {spread:.0f} s).", ""]
    return out[:-1]


def headline(su: dict | None) -> list[str]:
    """The headline's lines for section 6: the tiny gate's wall time and the real-scale cases' sum."""
    if not su:
        return []
    out = [f"- Suite: the tiny CPU gate (`-n 2`) took {p['wall_s'] / 60:.1f} min ({p['summary'].split(' in ')[0]})."
           for p in su["parts"] if p["part"] == "tiny"]
    real = counted_real_parts(su)
    if real:
        each = ", ".join(f"{Path(p['selection'][0]).stem} {p['wall_s'] / 60:.0f} min" for p in real)
        out.append(f"- Suite: the real-scale CPU cases, serial, took {sum(p['wall_s'] for p in real) / 60:.0f} min ({each}).")
    return out


if __name__ == "__main__":
    main()
