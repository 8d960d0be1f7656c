"""Section 5f, environments and sweeps: what making an environment costs, the sweep's false alarms, its wall time.

Two parts (`python -m benchmarks.sweep_cost`, JSON `benchmarks/results/sweep_cost.json`):

  environments  `isolate.environment.make` of one requirement (ENV_REQUIREMENT), with uv and with pip, each rep in a
                new folder: first with the tool's download cache emptied (cold), then with it as the last rep left
                it (first, warm cache), then the same folder again (cached: found made).
  sessions      pytest sessions of the same tiny cases (CASES, -n 2), interleaved, the order rotated per rep:
                  same    (every rep) `--gpu-budget-sweep` of EQUAL, a package no case imports at another release: its
                          environment holds nothing a case runs, so each case is measured twice, the second time through
                          the sweep's own path (the environment's interpreter, its helper and forkserver), and any
                          change past the case's tolerance is a false alarm;
                  plain   (the first --plain-reps reps) the gate alone;
                  release (the first --release-reps reps) `--gpu-budget-sweep` of RELEASE, a real other transformers.
                Every environment is made before the first timed session (made once, then found made, as in use).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, med, missing, ran, write

ENV_REQUIREMENT = "transformers==5.17.0"
EQUAL = "tomli-w==1.1.0"  # a pure package no case imports, at another release than the running one
RELEASE = "transformers==5.17.0"
CASES = ("memtests/test_s4_wrap_order.py::test_fixed", "memtests/test_s5_generic_oom.py::test_as_reported")
CACHE_VARS = {"uv": "UV_CACHE_DIR", "pip": "PIP_CACHE_DIR"}


def _tool(name: str):
    from gpu_budget.isolate.environment import EnvironmentFailed, find_tool

    try:
        return find_tool(name)
    except EnvironmentFailed:
        return None


def environments(reps: int) -> list[dict]:
    """Per tool and rep: seconds to make the environment in a new folder, then to find it made (twice)."""
    from gpu_budget.isolate.environment import make

    out = []
    for rep in range(reps):
        for name in ("uv", "pip"):
            tool = _tool(name)
            if tool is None:
                out.append({"tool": name, "rep": rep, "missing": True})
                continue
            with tempfile.TemporaryDirectory(prefix="sweep-cost-env-") as root:
                cold = rep == 0
                saved = os.environ.get(CACHE_VARS[name])
                if cold:  # the tool's download cache emptied: every wheel fetched from the registry
                    os.environ[CACHE_VARS[name]] = str(Path(root) / "tool-cache")
                try:
                    first = make([ENV_REQUIREMENT], Path(root) / "envs", tool)
                finally:
                    if cold:
                        if saved is None:
                            os.environ.pop(CACHE_VARS[name])
                        else:
                            os.environ[CACHE_VARS[name]] = saved
                found = [make([ENV_REQUIREMENT], Path(root) / "envs", tool) for _ in range(2)]
            row = {"tool": name, "rep": rep, "download_cache": "cold" if cold else "warm", "first_s": first.seconds,
                   "first_cached": first.cached, "overlay": dict(first.overlay),
                   "cached_s": [f.seconds for f in found], "cached_found": [f.cached for f in found]}
            print(f"environment {name} rep {rep}: first {first.seconds:.1f} s, cached {row['cached_s']}", flush=True)
            out.append(row)
    return out


def _session(kind: str, envs: Path, report: Path, baselines: Path) -> dict:
    sweep = {"plain": [], "same": ["--gpu-budget-sweep", EQUAL], "release": ["--gpu-budget-sweep", RELEASE]}[kind]
    argv = [sys.executable, "-m", "pytest", "--gpu-budget", *CASES, "--gpu-budget-scale", "tiny", "-n", "2", "-q",
            "-p", "no:cacheprovider", "-p", "no:randomly", "--gpu-budget-envs", str(envs), "--gpu-budget-baselines", str(baselines),
            "--gpu-budget-json", str(report), *sweep]
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode not in (0, 1):  # 1: a case judged over its budget or baseline is still a measured session
        raise RuntimeError(f"{kind} session failed ({done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return {"kind": kind, "wall_s": round(wall, 2), "load_at_start": round(load, 2), "exit": done.returncode,
            **_read(json.loads(report.read_text()))}


def _read(report: dict) -> dict:
    """The session's cases and, for a sweep, each swept point against its case's tolerance (findings_sweep.moved)."""
    from gpu_budget.model.result import Result
    from gpu_budget.report.findings_sweep import moved

    rows = [Result.from_json(r) for r in report["results"]]
    points = [{"case": r.nodeid, "version": m.version, "status": m.status, "before": m.before, "peak": m.peak,
               "allowed": m.allowed, "change": m.change, "past": m.past}
              for r in rows for m in moved(r) if not m.reference]
    return {"cases": len(rows), "verdicts": sorted(r.verdict for r in rows), "points": points,
            "environments": report.get("environments", [])}


def sessions(reps: int, plain_reps: int, release_reps: int) -> list[dict]:
    envs = Path(tempfile.mkdtemp(prefix="sweep-cost-envs-"))
    out = []
    try:
        with tempfile.TemporaryDirectory(prefix="sweep-cost-") as tmp:
            report, baselines = Path(tmp) / "report.json", Path(tmp) / "baselines"
            shutil.copytree(ROOT / "baselines", baselines)  # judged as committed; nothing recorded into the tree
            for kind in ("same", "release"):  # warm-up: each environment made once, before any timed session
                print(f"warm-up {kind}: {_session(kind, envs, report, baselines)['wall_s']} s", flush=True)
            for rep in range(reps):
                kinds = ["same"] + (["plain"] if rep < plain_reps else []) + (["release"] if rep < release_reps else [])
                kinds = kinds[rep % len(kinds):] + kinds[:rep % len(kinds)]  # rotated: none always first
                for kind in kinds:
                    found = {**_session(kind, envs, report, baselines), "rep": rep}
                    past = sum(1 for p in found["points"] if p["past"])
                    print(f"rep {rep} {kind}: {found['wall_s']} s, {len(found['points'])} points, {past} past", flush=True)
                    out.append(found)
    finally:
        shutil.rmtree(envs, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-reps", type=int, default=3)
    parser.add_argument("--reps", type=int, default=10, help="sessions sweeping the equal-content release")
    parser.add_argument("--plain-reps", type=int, default=5, help="of those reps, how many also run the plain gate")
    parser.add_argument("--release-reps", type=int, default=3, help="... and a sweep of another transformers")
    args = parser.parse_args()
    write("sweep_cost", {"env_requirement": ENV_REQUIREMENT, "equal": EQUAL, "release": RELEASE, "cases": list(CASES),
                         "environments": environments(args.env_reps),
                         "sessions": sessions(args.reps, args.plain_reps, args.release_reps)})


# -- RESULTS.md section 5f, from this script's JSON (benchmarks/report.py joins the sections) ------------------------

TITLE = "## 5f. Environments and sweeps: making one, false alarms, wall time"


def _ratios(found: list[dict], kind: str) -> list[float]:
    """Per rep that ran both, `kind`'s wall time over the plain gate's of the same rep."""
    by = {(s["rep"], s["kind"]): s["wall_s"] for s in found}
    return [by[(rep, kind)] / by[(rep, "plain")] for rep in sorted({s["rep"] for s in found})
            if (rep, kind) in by and (rep, "plain") in by]


def section(data: dict | None) -> list[str]:
    """Section 5f from sweep_cost.json."""
    out = [TITLE, ""]
    if data is None:
        return out + missing("sweep_cost", "sweep_cost")
    out += [ran(data), "",
            (f"`benchmarks/sweep_cost.py`. An environment of `{data['env_requirement']}` made by "
             "`gpu_budget.isolate.environment.make`, with each tool, each rep in a new folder (the first rep with the "
             "tool's download cache emptied), then found made twice in the same folder:"), "",
            ("| tool | download cache | reps | made in a new folder: median s (min .. max) | found made: median s (max) | "
             "overlay installed |"), "|---|---|---|---|---|---|"]
    envs = [e for e in data["environments"] if not e.get("missing")]
    for tool in ("uv", "pip"):
        for cache in ("cold", "warm"):
            rows = [e for e in envs if e["tool"] == tool and e["download_cache"] == cache]
            if not rows:
                continue
            first = [e["first_s"] for e in rows]
            found = [s for e in rows for s in e["cached_s"]]
            overlay = " ".join(f"{k}=={v}" for k, v in sorted(rows[0]["overlay"].items()))
            out.append(f"| {tool} | {cache} | {len(rows)} | {med(first):.1f} ({min(first):.1f} .. {max(first):.1f}) | "
                       f"{med(found):.2f} ({max(found):.2f}) | {overlay} |")
    absent = sorted({e["tool"] for e in data["environments"] if e.get("missing")})
    if absent:
        out.append(f"\n{', '.join(absent)}: not installed where this ran, not measured.")
    found = data["sessions"]
    same = [s for s in found if s["kind"] == "same"]
    points = [p for s in same for p in s["points"]]
    compared = [p for p in points if p["past"] is not None]
    past = [p for p in compared if p["past"]]
    changes = [p["change"] for p in compared]
    used = [p["allowed"] / p["before"] for p in compared]
    out += ["", (f"Sessions of {len(data['cases'])} tiny cases ({', '.join(f'`{c}`' for c in data['cases'])}), "
                 "`-n 2`, interleaved with the order rotated per rep. **False alarms**: a sweep of "
                 f"`{data['equal']}`, a package no case imports at another release than the running one, so each case is "
                 "measured a second time through the sweep's own path (the environment's interpreter, helper and "
                 "forkserver) with the same code; each such point is judged against its case's tolerance:"), "",
            ("| sessions | points compared | past the tolerance | change (min .. max) | allowed (min .. max) | "
             "largest change / its allowance |"), "|---|---|---|---|---|---|"]
    if compared:
        worst = max(abs(p["peak"] - p["before"]) / p["allowed"] for p in compared)
        out.append(f"| {len(same)} | {len(compared)} | {len(past)} of {len(compared)} | "
                   f"{min(changes):+.2%} .. {max(changes):+.2%} | {min(used):.2%} .. {max(used):.2%} | {worst:.2f} |")
    not_ok = [p for p in points if p["status"] != "ok"]
    if not_ok:
        out.append(f"\n{len(not_ok)} point(s) not measured: {', '.join(sorted({p['status'] for p in not_ok}))}.")
    out += ["", ("**Wall time** of each session over the plain gate's in the same rep (the same cases; every "
                 "environment made before the first timed session, so found made):"), "",
            "| session | reps | wall s: median (min .. max) | over the plain gate: median (min .. max) |",
            "|---|---|---|---|"]
    names = {"plain": "plain gate", "same": f"sweep `{data['equal']}` (one more version)",
             "release": f"sweep `{data['release']}` (one more version)"}
    for kind in ("plain", "same", "release"):
        walls = [s["wall_s"] for s in found if s["kind"] == kind]
        if not walls:
            continue
        r = _ratios(found, kind)
        ratio = f"{med(r):.2f}x ({min(r):.2f} .. {max(r):.2f})" if kind != "plain" and r else "-"
        out.append(f"| {names[kind]} | {len(walls)} | {med(walls):.1f} ({min(walls):.1f} .. {max(walls):.1f}) | {ratio} |")
    loads = [s["load_at_start"] for s in found]
    out += ["", f"1-minute load average at the sessions' starts {min(loads)} .. {max(loads)} (the machine is shared).", ""]
    return out


def headline(data: dict | None) -> list[str]:
    if data is None:
        return []
    same = [p for s in data["sessions"] if s["kind"] == "same" for p in s["points"] if p["past"] is not None]
    ratio = _ratios(data["sessions"], "release") or _ratios(data["sessions"], "same")
    if not ratio or not same:
        return []
    return [(f"- **Sweeps** (section 5f): a version's environment found made, a sweep of one more version runs in "
             f"{med(ratio):.2f}x the plain gate's wall time; the same code measured twice through the sweep's path is "
             f"past its tolerance {sum(p['past'] for p in same)} times in {len(same)}.")]


if __name__ == "__main__":
    main()
