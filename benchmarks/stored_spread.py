"""Section 5d, baselines that know their own noise: a case recorded over N fresh runs, then judged against its spread.

Two cases whose host RAM peak moves with scheduling, each in a temporary
pytest project of its own, gated on host RAM at the default tolerance (no
tolerance widened by hand):

- **pool**: a user's command, `pool_script.py`: `multiprocessing.Pool(4)` whose
  workers each allocate and touch 200 MiB at staggered times, hold it a moment
  and return; how many overlap depends on when the scheduler runs them;
- **s1 workers**: S1 with 4 DataLoader workers forking over a dataset held as
  Python objects (`s1_wav2vec2.scenarios.WORKERS`, tiny scale,
  memtests/test_s1_workers.py's as-reported case), a function case; the batches
  in flight between the workers and the main process move the tree's peak.

For each case, every session a fresh `python -m pytest --gpu-budget` process
whose `--gpu-budget-json` row is read:

1. one session with `--gpu-budget-update --gpu-budget-record-runs=N` records the
   baseline: the median of N fresh runs and their spread;
2. `--clean` sessions (default 10) with no change: their verdicts (false
   alarms), and what the default tolerance alone would have said of the same
   runs (each row's own `change`, the gate's, against the tolerance's limit);
3. planted changes (retained, touched bytes held by the main process for the
   whole run: STORED_SPREAD_PLANT_BYTES in the script, S1's `plant_bytes` param), a fraction
   of the baseline's gated peak, in the ladder FRACTIONS: each fraction up to
   `--planted` sessions (default 10), stopping at its first miss (it can no
   longer be caught 10 of 10), and the ladder stops at the first fraction
   caught every time: the smallest planted change caught.

The results are written after every session, so a run cut short keeps what it
measured.

    python -m benchmarks.stored_spread [--cases pool,s1] [--record-runs 5] [--clean 10] [--planted 10]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from pathlib import Path

from benchmarks.common import MIB, ROOT, gate_preload, incomplete, missing, one_case_session, ran, write

SECTION = "stored_spread"
FRACTIONS = (0.02, 0.05, 0.10, 0.20, 0.50, 1.00, 2.00)
PLANT_VAR = "STORED_SPREAD_PLANT_BYTES"  # read by the memtests: a planted session's bytes
BUDGET = "6 GiB"  # generous: the sessions test the baseline comparison, not the budget

POOL_SCRIPT = '''\
"""A user's script: a multiprocessing.Pool(4) whose workers each allocate 200 MiB at staggered times and hash it."""
import hashlib
import os
import time
from multiprocessing import Pool

MiB = 2**20


def work(i):
    time.sleep(0.1 * i)  # staggered starts: how many workers hold their 200 MiB at once is up to the scheduler
    held = b"\\x01" * (200 * MiB)
    return hashlib.sha256(held).hexdigest()


if __name__ == "__main__":
    planted = b"\\x01" * int(os.environ.get("STORED_SPREAD_PLANT_BYTES", "0"))  # a planted change: held for the whole run
    with Pool(4) as pool:
        print(len(set(pool.map(work, range(4), chunksize=1))), "distinct digest(s)")
'''

POOL_TEST = '''\
import sys
from pathlib import Path

import pytest
from gpu_budget import Scenario

HERE = Path(__file__).parent


@pytest.mark.gpu_budget(ram="BUDGET")
def test_pool(gpu_budget):
    gpu_budget.measure(Scenario(name="pool", command=[sys.executable, str(HERE / "pool_script.py")]))
'''.replace("BUDGET", BUDGET)

S1_TEST = f'''\
import os

import pytest
from s1_wav2vec2.scenarios import WORKERS


@pytest.mark.gpu_budget(ram="{BUDGET}")
def test_s1_workers(gpu_budget):
    plant = int(os.environ.get("{PLANT_VAR}", "0"))
    gpu_budget.measure(WORKERS.with_params(plant_bytes=plant) if plant else WORKERS, label="as-reported")
'''

CASES = {  # name -> (what it is, files of its project, the ini's preload)
    "pool": ("a user's command: multiprocessing.Pool(4), workers allocating 200 MiB at staggered times",
             {"pool_script.py": POOL_SCRIPT, "test_pool.py": POOL_TEST}, ()),
    "s1": ("S1's workers case as reported (4 forked DataLoader workers over a dataset held as Python objects), tiny",
           {"test_s1_workers.py": S1_TEST}, None),  # None: the gate's own preload (pyproject.toml)
}


NAMES = {"pool": "the Pool(4) script", "s1": "S1's workers case"}  # how RESULTS.md names each case


def write_project(folder: Path, case: str) -> None:
    _, files, preload = CASES[case]
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    preload = gate_preload() if preload is None else preload
    (folder / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider -p no:xdist -p no:randomly\n"
                                       f"gpu_budget_preload = {' '.join(preload)}\n")


def session(folder: Path, kind: str, plant_bytes: int = 0, record_runs: int = 0) -> dict:
    """One fresh `pytest --gpu-budget` process over the project; its one row, as the gate judged it."""
    record = ["--gpu-budget-update", f"--gpu-budget-record-runs={record_runs}"] if record_runs else []
    row, exit_code, wall, load_start = one_case_session(folder, kind, record, [str(ROOT / "memtests")],
                                                        {PLANT_VAR: str(plant_bytes)})
    return {"kind": kind, "plant_bytes": plant_bytes, "verdict": row["verdict"], "passed": row["passed"],
            "message": row["message"], "exit_code": exit_code, "ram": row["peaks"]["ram"],
            "ram_tree": row["peaks"]["ram_tree"], "ram_tensor": row["peaks"].get("ram_tensor"),
            "change": row.get("change"), "tolerance": row.get("tolerance"), "session_wall_s": round(wall, 2),
            "load_average_start": [round(x, 2) for x in load_start]}


def stored_entry(folder: Path) -> tuple[dict, str]:
    """The one baseline entry the record session wrote, and the file's sha256 (to show nothing rewrote it)."""
    (path,) = (folder / "baselines").glob("*/*.json")
    data = json.loads(path.read_text())
    (entries,) = data["entries"].values()
    (entry,) = entries.values()
    return entry, hashlib.sha256(path.read_bytes()).hexdigest()


def _show(r: dict) -> str:
    return (f"ram_tree {r['ram_tree'] / MIB:.1f} MiB (main {r['ram'] / MIB:.1f}), {r['verdict']}, "
            f"{r['session_wall_s']:.0f} s, load {r['load_average_start'][0]}")


def run_case(case: str, folder: Path, args, save) -> dict:
    what, files, _ = CASES[case]
    write_project(folder, case)
    out: dict = {"case": case, "what": what, "files": files, "record_runs": args.record_runs, "clean": [],
                 "planted": [], "complete": False}
    print(f"stored_spread {case}: record over {args.record_runs} runs ({time.strftime('%H:%M')})", flush=True)
    out["record"] = session(folder, "record", record_runs=args.record_runs)
    out["entry"], digest = stored_entry(folder)
    print(f"  {_show(out['record'])}; spread {out['entry'].get('spread')}", flush=True)
    save(case, out)
    for i in range(args.clean):
        out["clean"].append(session(folder, "clean"))
        print(f"  clean {i + 1} of {args.clean}: {_show(out['clean'][-1])}", flush=True)
        save(case, out)
    then = out["entry"]["peaks"]["ram_tree"]
    for fraction in FRACTIONS:
        caught = 0
        for i in range(args.planted):
            r = session(folder, f"planted {fraction:.0%}", plant_bytes=int(then * fraction))
            out["planted"].append({**r, "fraction": fraction})
            print(f"  planted +{fraction:.0%} {i + 1}: {_show(r)}", flush=True)
            save(case, out)
            if r["verdict"] != "regression":
                break
            caught += 1
        if caught == args.planted:
            break
    out["unchanged"] = stored_entry(folder)[1] == digest  # no session rewrote the recorded entry
    out["complete"] = True
    save(case, out)
    return out


def main() -> None:
    from gpu_budget.declare.marks import DEFAULT_TOLERANCE

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="pool,s1")
    parser.add_argument("--record-runs", type=int, default=5, help="N of --gpu-budget-record-runs")
    parser.add_argument("--clean", type=int, default=10, help="fresh sessions with no change")
    parser.add_argument("--planted", type=int, default=10, help="fresh sessions per planted fraction, at most")
    args = parser.parse_args()
    from gpu_budget.judge.compare import MUST_CATCH, SPREAD_MULTIPLE

    t_start = time.perf_counter()
    data = {"tolerance_at_run": {"rel": DEFAULT_TOLERANCE.rel, "abs": DEFAULT_TOLERANCE.abs},
            "spread_multiple": SPREAD_MULTIPLE, "must_catch": MUST_CATCH, "fractions": list(FRACTIONS),
            "budget": BUDGET, "planted_sessions": args.planted, "cases": {}}

    def save(case: str, result: dict) -> None:
        data["cases"][case] = result
        write(SECTION, {**data, "wall_s": round(time.perf_counter() - t_start, 1)})

    with tempfile.TemporaryDirectory(prefix="bench-stored-spread-") as tmp:
        for case in args.cases.split(","):
            run_case(case, Path(tmp) / case, args, save)


# -- RESULTS.md section 5d, from this script's JSON (benchmarks/report.py joins the sections) ------------------------

def summary(case: dict, res: dict) -> dict:
    """The figures a case's rows show: the stored spread and allowance, false alarms with it and at the tolerance
    alone, each planted fraction's catches, and the smallest fraction caught in every session."""
    tol, multiple, sessions = res["tolerance_at_run"], res["spread_multiple"], res["planted_sessions"]
    entry = case["entry"]
    then = entry["peaks"]["ram_tree"]
    spread = (entry.get("spread") or {}).get("by_metric", {}).get("ram_tree")
    margin = then * tol["rel"] + tol["abs"]
    allowed = max(margin, multiple * spread) if spread is not None else margin

    def alone(r: dict) -> bool:  # the tolerance alone, on each gated figure's change as the gate computed it
        return any(change is not None and change > tol["rel"] + tol["abs"] / entry["peaks"][metric]
                   for metric, change in (r["change"] or {}).items())

    clean = case["clean"]
    by_fraction: dict[float, dict] = {}
    for r in case["planted"]:
        cell = by_fraction.setdefault(r["fraction"], {"sessions": 0, "caught": 0, "alone": 0, "changes": []})
        cell["sessions"] += 1
        cell["caught"] += r["verdict"] == "regression"
        cell["alone"] += alone(r)
        cell["changes"].append((r["ram_tree"] - then) / then)
    full = [f for f, c in by_fraction.items() if c["caught"] == c["sessions"] == sessions]
    trees = [r["ram_tree"] for r in clean]
    tensor = (entry.get("spread") or {}).get("by_metric", {}).get("ram_tensor")
    return {"then": then, "spread": spread, "tensor_spread": tensor, "runs": (entry.get("spread") or {}).get("runs"), "margin": margin,
            "allowed": allowed, "clean": len(clean),
            "false_alarms": sum(r["verdict"] != "pass" for r in clean), "false_alone": sum(alone(r) for r in clean),
            "warned": {m: sum(f"{m}'s stored spread" in r["message"] for r in clean) for m in ("ram_tree", "ram_tensor")},
            "clean_min": min(trees) if trees else None, "clean_max": max(trees) if trees else None,
            "by_fraction": by_fraction, "smallest": min(full) if full else None}


def tensor(s: dict, case: dict, must_catch: float) -> str:
    """The live tensor bytes' stored spread and warnings, where the case measures them (a torch case on a CPU)."""
    if s["tensor_spread"] is None:
        return ""
    then = case["entry"]["peaks"]["ram_tensor"]
    return (f" Live tensor bytes (`ram_tensor`, gated too): baseline {then / MIB:.1f} MiB, stored spread "
            f"{s['tensor_spread'] / MIB:.2f} MiB; rows warning that its spread is too wide to catch +{must_catch:.0%}: "
            f"{s['warned']['ram_tensor']} of {s['clean']} (the planted bytes are not tensors).")


def section(res: dict | None) -> list[str]:
    """Section 5d from stored_spread.json: cases recorded over N runs, judged against their stored spread."""
    out = ["## 5d. Baselines that know their own noise: a case recorded over N runs", ""]
    if res is None or not res.get("cases"):
        return out + missing(SECTION, SECTION)
    tol, multiple = res["tolerance_at_run"], res["spread_multiple"]
    out += [ran(res), "",
            (f"Two cases whose host RAM peak moves with scheduling, each in a temporary pytest project, gated on host "
             f"RAM (`ram_tree`) at the default tolerance (rel {tol['rel']:.1%} + {tol['abs'] / MIB:.0f} MiB; no "
             f"tolerance widened by hand) under `@pytest.mark.gpu_budget(ram=\"{res['budget']}\")`. Each session is a "
             f"fresh `python -m pytest --gpu-budget` process; the figures are its `--gpu-budget-json` row "
             f"(`benchmarks/stored_spread.py`). One session with `--gpu-budget-update --gpu-budget-record-runs=N` "
             f"records the baseline (the median run and the runs' spread); then sessions with no change; then planted "
             f"changes (bytes held by the main process for the whole run, a fraction of the baseline's `ram_tree`), "
             f"each fraction up to {res['planted_sessions']} sessions, stopped at its first miss, the ladder stopped "
             f"at the first fraction caught in every session. The gate allows the larger of the tolerance and "
             f"{multiple}x the stored spread; *tolerance alone* judges the same rows' change of each gated figure at the "
             f"default tolerance, as an entry recorded over one run is judged."), ""]
    for name, case in res["cases"].items():
        s = summary(case, res)
        partial = incomplete(case)
        spread = "none stored" if s["spread"] is None else f"{s['spread'] / MIB:.1f} MiB over {s['runs']} runs"
        out += [f"**{NAMES.get(name, name)}** (`{name}`): {case['what']}.{partial}", "",
                (f"Baseline `ram_tree` {s['then'] / MIB:.1f} MiB (median of {case['record_runs']} runs), stored spread "
                 f"{spread}: allowed +{s['allowed'] / MIB:.1f} MiB ({s['allowed'] / s['then']:.1%}) where the tolerance "
                 f"alone allows +{s['margin'] / MIB:.1f} MiB ({s['margin'] / s['then']:.1%}). Clean sessions' "
                 f"`ram_tree` {s['clean_min'] / MIB:.1f} .. {s['clean_max'] / MIB:.1f} MiB; rows warning that "
                 f"`ram_tree`'s spread is too wide to catch +{res['must_catch']:.0%}: {s['warned']['ram_tree']} of "
                 f"{s['clean']}." + tensor(s, case, res["must_catch"])), "",
                "| change | sessions | failed, stored spread | failed, tolerance alone | measured change (min .. max) |",
                "|---|---|---|---|---|"]
        changes = [(r["ram_tree"] - s["then"]) / s["then"] for r in case["clean"]]
        if changes:
            out.append(f"| none (false alarms) | {s['clean']} | {s['false_alarms']} of {s['clean']} | "
                       f"{s['false_alone']} of {s['clean']} | {min(changes):+.2%} .. {max(changes):+.2%} |")
        for fraction, c in sorted(s["by_fraction"].items()):
            stopped = "" if c["caught"] == c["sessions"] else " (stopped at its first miss)"
            out.append(f"| +{fraction:.0%} planted | {c['sessions']}{stopped} | {c['caught']} of {c['sessions']} | "
                       f"{c['alone']} of {c['sessions']} | {min(c['changes']):+.2%} .. {max(c['changes']):+.2%} |")
        smallest = "none of the fractions tried" if s["smallest"] is None else f"+{s['smallest']:.0%}"
        out += ["", f"Smallest planted change caught in every session: {smallest}.", ""]
    return out


def headline(res: dict | None) -> list[str]:
    """The headline's line for section 5d: false alarms with the stored spread and alone, the smallest change caught."""
    if not (res and res.get("cases")):
        return []
    parts = []
    for name, case in res["cases"].items():
        s = summary(case, res)
        smallest = "none of those tried" if s["smallest"] is None else f"+{s['smallest']:.0%}"
        parts.append(f"{NAMES.get(name, name)} {s['false_alarms']}/{s['clean']} false alarms ({s['false_alone']}/{s['clean']} at the "
                     f"tolerance alone), smallest change caught every time {smallest}")
    return [f"- Baselines recorded over N runs, judged against their stored spread (5d): {'; '.join(parts)}."]


if __name__ == "__main__":
    main()
