"""Section 5e, measured against the base revision: `--gpu-budget-against` and `python -m gpu_budget bisect`.

A temporary git repository holds a user project with two cases, gated on
host RAM at the default tolerance:

- **s1 truncate**, a function case: S1's fine-tune with the truncation fix at
  tiny scale (`s1_wav2vec2.scenarios`, the runner the memtests gate); a planted
  change is the scenario param `plant_bytes` (retained, touched bytes for the
  whole run), set in the committed test file;
- **train script**, a command case: `train.py`, a plain PyTorch loop (an MLP,
  AdamW, a few steps on random data); a planted change is its `PLANT_BYTES`,
  held for the whole run.

The base commit holds the two cases and their stored baselines, recorded by a
plain gate. Then, each pytest run a fresh process timed from outside:

1. **no change**: head is a commit that moves no peak (a README line). `--clean`
   rounds (default 10), each one `--gpu-budget-against=base` run and one plain
   gate of the same cases (`--gpu-budget`, judged against the stored baselines),
   interleaved and their order alternated round to round (plain first, then
   against first): false alarms of each kind, and the wall time of the against
   run over the plain gate's of the same round;
2. **planted**: head is a commit that plants `--fraction` (default 2 %) of each
   case's stored `ram_tree` in both cases; `--planted` against runs (default
   10): how many each case is failed as a regression;
3. **bisect**: 16 commits after base, each touching a README; commit 5 plants
   5 % of the command case's peak in train.py, commit 11 5 % of the function
   case's in the test file; `python -m gpu_budget bisect base tip -k CASE` per
   case: the gate runs it took (the reference and the commits tried) and the
   commit it named.

Results are written after every run, so a run cut short keeps what it measured.

    python -m benchmarks.against_base [--clean 10] [--planted 10] [--fraction 0.02]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import MIB, ROOT, incomplete, missing, ran, write
from benchmarks.overhead import interval

SECTION = "against"
PRELOAD = ("torch", "transformers", "s1_wav2vec2.runner")
BUDGET = "4 GiB"  # generous: the runs test the comparison, not the budget
COMMITS = 16  # the bisect's range after base
BISECT_PLANTS = {5: "train_script", 11: "s1_truncate"}  # commit -> the case whose peak it moves by BISECT_FRACTION
BISECT_FRACTION = 0.05
CASES = {"s1_truncate": "test_cases.py::test_s1_truncate", "train_script": "test_cases.py::test_train_script"}
KINDS = {"s1_truncate": "function", "train_script": "command"}

TRAIN_PY = '''\
"""A plain PyTorch training loop on the CPU: an MLP on random data, AdamW, a few steps."""
import torch

PLANT_BYTES = {plant}  # a planted change: bytes held for the whole run
planted = b"\\x01" * PLANT_BYTES

torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
                            torch.nn.Linear(4096, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 16))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(3):
    x, y = torch.randn(64, 1024), torch.randint(0, 16, (64,))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
print(f"loss {{loss.item():.4f}}")
'''

TEST_PY = f'''\
import sys

import pytest
from gpu_budget import Scenario
from s1_wav2vec2.scenarios import AS_REPORTED

PLANT_BYTES = {{plant}}  # a planted change in the function case: the scenario's plant_bytes
TRUNCATE = AS_REPORTED.with_fixes("truncate")


@pytest.mark.gpu_budget(ram="{BUDGET}")
def test_s1_truncate(gpu_budget):
    gpu_budget.measure(TRUNCATE.with_params(plant_bytes=PLANT_BYTES) if PLANT_BYTES else TRUNCATE, label="truncate")


@pytest.mark.gpu_budget(ram="{BUDGET}")
def test_train_script(gpu_budget):
    gpu_budget.measure(Scenario(name="train-script", command=[sys.executable, "train.py"]))
'''

INI = f"[pytest]\naddopts = -p no:cacheprovider -p no:xdist\ngpu_budget_preload = {' '.join(PRELOAD)}\n"
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "bench@example.com", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}


def environ() -> dict:
    pythonpath = os.pathsep.join(filter(None, [str(ROOT / "memtests"), os.environ.get("PYTHONPATH")]))
    return {**{k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_STEP_SUMMARY")}, **GIT_ENV,
            "PYTHONPATH": pythonpath}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=environ(), check=True, capture_output=True,
                          text=True).stdout.strip()


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def write_cases(repo: Path, function_plant: int = 0, command_plant: int = 0) -> None:
    (repo / "test_cases.py").write_text(TEST_PY.format(plant=function_plant))
    (repo / "train.py").write_text(TRAIN_PY.format(plant=command_plant))


def by_case(rows: list[dict]) -> dict[str, dict]:
    """Each case's row (or verdict) by its name here: the one whose node id is the case's, a measure() label after it."""
    return {name: next(r for r in rows if r["nodeid"] == node or r["nodeid"].startswith(node + "::"))
            for name, node in CASES.items()}


def pytest_run(repo: Path, kind: str, args: list[str], reports: Path) -> dict:
    """One fresh `python -m pytest` process over both cases; its wall time from outside and its JSON report."""
    report = reports / f"{kind}-{time.monotonic_ns()}.json"
    load = os.getloadavg()
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "--gpu-budget", f"--gpu-budget-json={report}", *args],
                          cwd=repo, env=environ(), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1) or not report.exists():
        raise RuntimeError(f"{kind}: exit {proc.returncode}, no report:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    return {"kind": kind, "exit_code": proc.returncode, "wall_s": round(wall, 2), "load_average_start": round(load[0], 2),
            "report": json.loads(report.read_text())}


def plain(repo: Path, reports: Path) -> dict:
    """A plain gate of both cases, judged against the committed baselines."""
    r = pytest_run(repo, "plain", [], reports)
    r["cases"] = {name: {"verdict": row["verdict"], "ram_tree": row["peaks"]["ram_tree"],
                         "change": (row.get("change") or {}).get("ram_tree"), "message": row["message"]}
                  for name, row in by_case(r.pop("report")["results"]).items()}
    return r


def against(repo: Path, reports: Path, kind: str) -> dict:
    """One `--gpu-budget-against=base` run of both cases: each case's status and figures, each session's wall."""
    r = pytest_run(repo, kind, ["--gpu-budget-against=base"], reports)
    data = r.pop("report")
    cases = by_case(data["cases"])
    r["sessions"] = [{"side": s["side"], "wall_s": s["wall_seconds"]} for s in data["runs"]]
    r["cases"] = {}
    for name, c in cases.items():
        fig = next((f for f in c["figures"] if f["metric"] == "ram_tree"), None)
        r["cases"][name] = {"status": c["status"], "message": c["message"],
                            "figure": None if fig is None else {k: fig[k] for k in ("metric", "base", "head", "change",
                                                                                    "noisy", "regressed")}}
    return r


def bisect(repo: Path, case: str, reports: Path) -> dict:
    out = reports / f"bisect-{case}.json"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gpu_budget", "bisect", "base", "tip", "-k", CASES[case].split("::")[1],
                           "--json", str(out)], cwd=repo, env=environ(), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if not out.exists():
        raise RuntimeError(f"bisect {case}: exit {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    return {"case": case, "exit_code": proc.returncode, "wall_s": round(wall, 2), "found": json.loads(out.read_text()),
            "stdout": proc.stdout[-4000:]}


def main() -> None:
    from gpu_budget.declare.marks import DEFAULT_TOLERANCE

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clean", type=int, default=10, help="rounds of one against run and one plain gate, no change")
    parser.add_argument("--planted", type=int, default=10, help="against runs with the planted change at head")
    parser.add_argument("--fraction", type=float, default=0.02, help="the planted change, of each case's stored peak")
    args = parser.parse_args()
    t_start = time.perf_counter()
    data: dict = {"tolerance_at_run": {"rel": DEFAULT_TOLERANCE.rel, "abs": DEFAULT_TOLERANCE.abs}, "budget": BUDGET,
                  "preload": list(PRELOAD), "cases": {n: {"node": CASES[n], "kind": KINDS[n]} for n in CASES},
                  "fraction": args.fraction, "train_py": TRAIN_PY.format(plant=0), "test_py": TEST_PY.format(plant=0),
                  "clean": [], "planted": [], "bisect": [], "complete": False}

    def save() -> None:
        write(SECTION, {**data, "wall_s": round(time.perf_counter() - t_start, 1)})

    with tempfile.TemporaryDirectory(prefix="bench-against-") as tmp:
        repo, reports = Path(tmp) / "project", Path(tmp) / "reports"
        repo.mkdir()
        reports.mkdir()
        (repo / "pytest.ini").write_text(INI)
        (repo / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
        write_cases(repo)
        git(repo, "init", "-q", "-b", "main")
        commit(repo, "two memory cases")
        print(f"against: recording the baselines ({time.strftime('%H:%M')})", flush=True)
        record = pytest_run(repo, "record", ["--gpu-budget-update"], reports)
        peaks = {name: row["peaks"]["ram_tree"] for name, row in by_case(record["report"]["results"]).items()}
        data["stored"] = peaks
        base = commit(repo, "record the baselines")
        git(repo, "tag", "base")
        (repo / "README").write_text("a change that moves no peak\n")
        data["commits"] = {"base": base, "no_change": commit(repo, "docs only")}
        save()

        for i in range(args.clean):
            print(f"against: clean round {i + 1} of {args.clean} ({time.strftime('%H:%M')})", flush=True)
            pair = {}
            for kind in (("plain", "against") if i % 2 == 0 else ("against", "plain")):
                pair[kind] = plain(repo, reports) if kind == "plain" else against(repo, reports, "against")
            data["clean"].append({"round": i + 1, "first": "plain" if i % 2 == 0 else "against", **pair})
            print(f"  plain {pair['plain']['wall_s']:.0f} s, against {pair['against']['wall_s']:.0f} s "
                  f"({len(pair['against']['sessions'])} sessions): "
                  + ", ".join(f"{n} {c['status']}" for n, c in pair["against"]["cases"].items()), flush=True)
            save()

        plants = {name: int(peaks[name] * args.fraction) for name in CASES}
        write_cases(repo, function_plant=plants["s1_truncate"], command_plant=plants["train_script"])
        data["commits"]["planted"] = commit(repo, f"plant +{args.fraction:.0%} in both cases")
        data["plant_bytes"] = plants
        for i in range(args.planted):
            print(f"against: planted run {i + 1} of {args.planted} ({time.strftime('%H:%M')})", flush=True)
            data["planted"].append({"run": i + 1, **against(repo, reports, "planted")})
            print("  " + ", ".join(f"{n} {c['status']}" for n, c in data["planted"][-1]["cases"].items()), flush=True)
            save()

        git(repo, "checkout", "-q", "-b", "bisect", "base")
        planted_at, plant = {}, {"s1_truncate": 0, "train_script": 0}
        for k in range(1, COMMITS + 1):
            if k in BISECT_PLANTS:
                name = BISECT_PLANTS[k]
                plant[name] = int(peaks[name] * BISECT_FRACTION)
                write_cases(repo, function_plant=plant["s1_truncate"], command_plant=plant["train_script"])
            (repo / "README").write_text(f"commit {k}\n")
            sha = commit(repo, f"commit {k}" + (f": +{BISECT_FRACTION:.0%} in {BISECT_PLANTS[k]}" if k in BISECT_PLANTS else ""))
            if k in BISECT_PLANTS:
                planted_at[BISECT_PLANTS[k]] = {"commit": sha, "k": k, "plant_bytes": plant[BISECT_PLANTS[k]]}
        git(repo, "tag", "tip")
        data["bisect_setup"] = {"commits": COMMITS, "fraction": BISECT_FRACTION, "planted": planted_at}
        for name in CASES:
            print(f"against: bisect {name} ({time.strftime('%H:%M')})", flush=True)
            found = bisect(repo, name, reports)
            data["bisect"].append(found)
            print(f"  exit {found['exit_code']}, {len(found['found']['tried'])} commits tried, first "
                  f"{(found['found']['first'] or '')[:10]} (planted {planted_at[name]['commit'][:10]})", flush=True)
            save()
        data["complete"] = True
        save()


# -- RESULTS.md section 5e, from this script's JSON (benchmarks/report.py joins the sections) ------------------------

def against_summary(res: dict) -> dict:
    """The figures the section shows (tests/docs check docs/against.md's sentence against them)."""
    clean, planted = res["clean"], res["planted"]
    ratios = [r["against"]["wall_s"] / r["plain"]["wall_s"] for r in clean]
    out = {"rounds": len(clean), "planted_runs": len(planted),
           "false_alarms": sum(c["status"] != "pass" for r in clean for c in r["against"]["cases"].values()),
           "false_runs": sum(r["against"]["exit_code"] != 0 for r in clean),
           "plain_false": sum(r["plain"]["exit_code"] != 0 for r in clean),
           "sessions": sorted({len(r["sessions"]) for r in [c["against"] for c in clean] + planted}),
           "ratio": interval(ratios) if len(ratios) > 1 else None, "ratios": ratios,
           "caught": {n: sum(p["cases"][n]["status"] == "regression" for p in planted) for n in res["cases"]},
           "bisect": []}
    for b in res["bisect"]:
        want = res["bisect_setup"]["planted"][b["case"]]
        found = b["found"]
        out["bisect"].append({"case": b["case"], "runs": 1 + len(found["tried"]), "tried": len(found["tried"]),
                              "right": found["first"] == want["commit"], "k": want["k"], "exit_code": b["exit_code"],
                              "wall_s": b["wall_s"]})
    return out


def section(res: dict | None) -> list[str]:
    """Section 5e from against.json: --gpu-budget-against with no change and a planted one, its cost, a bisect."""
    out = ["## 5e. Measured against the base revision: `--gpu-budget-against` and bisect", ""]
    if res is None or not res.get("clean"):
        return out + missing(SECTION, SECTION)
    s, tol = against_summary(res), res["tolerance_at_run"]
    partial = incomplete(res, "run")
    loads = [r[k]["load_average_start"] for r in res["clean"] for k in ("plain", "against")]
    loads += [p["load_average_start"] for p in res["planted"]]
    out += [ran(res) + f" 1-minute load average at the runs' starts {min(loads):.2f} .. {max(loads):.2f}.{partial}", "",
            (f"A temporary git repository holds a user project with two cases under "
             f"`@pytest.mark.gpu_budget(ram=\"{res['budget']}\")` and the default tolerance (rel {tol['rel']:.1%} + "
             f"{tol['abs'] / MIB:.0f} MiB): **s1 truncate**, a function case (S1's fine-tune with the truncation fix, "
             f"tiny scale), and **train script**, a command case (`train.py`, a plain PyTorch loop: an MLP, AdamW, 3 "
             f"steps). The base commit holds both and their baselines, recorded by a plain gate (stored `ram_tree`: "
             + ", ".join(f"{n} {v / MIB:.1f} MiB" for n, v in res["stored"].items())
             + f"). Each run is a fresh `python -m pytest` process, timed from outside (`benchmarks/against_base.py`). "
             f"**No change**: head is a commit that touches only a README; {s['rounds']} rounds, each one "
             f"`--gpu-budget-against=base` run and one plain gate (`--gpu-budget` against the stored baselines) of the "
             f"same two cases, their order alternated round to round. **Planted**: head plants +{res['fraction']:.0%} "
             f"of each case's stored `ram_tree` in both cases (S1's `plant_bytes` param, `train.py`'s held bytes); "
             f"{s['planted_runs']} against runs."), "",
            "| | runs | function case (s1 truncate) | command case (train script) |", "|---|---|---|---|"]
    for label, runs, key in (("no change: against, not pass", res["clean"], "against"),):
        cells = [sum(r[key]["cases"][n]["status"] != "pass" for r in runs) for n in res["cases"]]
        out.append(f"| {label} (false alarms) | {len(runs)} | {cells[0]} of {len(runs)} | {cells[1]} of {len(runs)} |")
    cells = [sum(r["plain"]["cases"][n]["verdict"] != "pass" for r in res["clean"]) for n in res["cases"]]
    out.append(f"| no change: plain gate, not pass | {s['rounds']} | {cells[0]} of {s['rounds']} | {cells[1]} of {s['rounds']} |")
    if res["planted"]:
        n = s["planted_runs"]
        changes = {c: [p["cases"][c]["figure"]["change"] for p in res["planted"] if p["cases"][c]["figure"]]
                   for c in res["cases"]}
        cells = [f"{s['caught'][c]} of {n} (change {min(changes[c]):+.2%} .. {max(changes[c]):+.2%})" if changes[c]
                 else f"{s['caught'][c]} of {n}" for c in res["cases"]]
        out.append(f"| planted +{res['fraction']:.0%}: against, regression | {n} | {cells[0]} | {cells[1]} |")
    plain_walls = [r["plain"]["wall_s"] for r in res["clean"]]
    against_walls = [r["against"]["wall_s"] for r in res["clean"]]
    iv = s["ratio"]
    ratio = "-" if iv is None else f"{iv['geomean']:.2f}x (95 % interval {iv['low']:.2f} .. {iv['high']:.2f}x)"
    sessions = " or ".join(str(x) for x in s["sessions"])
    out += ["", (f"**What it costs**: an against run over the plain gate of the same cases in the same round, wall time "
                 f"(pytest start to exit), geometric mean over {s['rounds']} rounds: **{ratio}**; each against run ran "
                 f"{sessions} sessions (one per side, then a pair more of a case it could not tell from one run a "
                 f"side). Plain gate {min(plain_walls):.0f} .. "
                 f"{max(plain_walls):.0f} s, against run {min(against_walls):.0f} .. {max(against_walls):.0f} s on this "
                 f"shared host: read the ratio, not the seconds."), ""]
    setup = res.get("bisect_setup")
    if setup and s["bisect"]:
        out += [(f"**Bisect**: {setup['commits']} commits after base (each touching a README); one of them plants "
                 f"+{setup['fraction']:.0%} of a case's stored `ram_tree` (commit "
                 + " and commit ".join(f"{v['k']} in {n}" for n, v in setup["planted"].items())
                 + "); `python -m gpu_budget bisect base tip -k CASE` per case. Gate runs: the reference at base and "
                 "each commit `git bisect` tried, one fresh session each."), "",
                "| case | planted at | gate runs (reference + tried) | commit named | right | wall | per gate run |",
                "|---|---|---|---|---|---|---|"]
        for b in s["bisect"]:
            named = next(x for x in res["bisect"] if x["case"] == b["case"])["found"]["first"]
            out.append(f"| {b['case']} | commit {b['k']} | {b['runs']} (1 + {b['tried']}) | "
                       f"{(named or 'none')[:10]} | {'yes' if b['right'] else 'NO'} | {b['wall_s']:.0f} s | "
                       f"{b['wall_s'] / b['runs']:.0f} s |")
        out.append("")
    return out


def headline(res: dict | None) -> list[str]:
    """The headline's line for section 5e."""
    if not (res and res.get("clean")):
        return []
    s = against_summary(res)
    iv = s["ratio"]
    cost = "" if iv is None else f"; wall time {iv['geomean']:.2f}x a plain gate ({iv['low']:.2f} .. {iv['high']:.2f}x)"
    caught = ", ".join(f"{n} {c}/{s['planted_runs']}" for n, c in s["caught"].items())
    bis = "; ".join(f"bisect of {b['case']} over {COMMITS} commits {b['runs']} gate runs, "
                    f"{'the planted commit' if b['right'] else 'a WRONG commit'}" for b in s["bisect"])
    return [f"- `--gpu-budget-against` (5e): {s['false_alarms']} false alarms in {s['rounds']} runs of two cases; "
            f"+{res['fraction']:.0%} caught {caught}{cost}" + (f"; {bis}" if bis else "") + "."]


if __name__ == "__main__":
    main()
