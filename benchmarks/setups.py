"""Section 7, across setups: the tiny gate under emulated machines, and what it still catches there.

One host stands in for several: a setup is a Python environment (a venv made by
the README command, one with the bench extra, the machine's own Python with a
hundred packages installed beside) and what the environment or the options
change (the CPU capability the libraries may use, the kernel-dispatch pin,
threads per child, a serial run). Two parts, each setup in its own fresh
session:

- gate: the whole tiny gate (`pytest --gpu-budget memtests`) against the
  committed baselines, under CI=true (nothing is written): every case's
  verdict, and the spread of each gated metric against its baseline (host RAM
  with the floor taken off, live tensor bytes).
- detection: per setup, `--rounds` fresh sessions, each measuring the chosen
  cases clean and with planted +2 % regressions (retained bytes, which only
  host RAM sees, and a retained tensor, which tensor bytes see too), judged by
  compare.judge against the committed baseline with this setup's fingerprint
  difference, exactly as the gate judges.

    python -m benchmarks.setups --part gate,detection --readme-python /venv/bin/python \\
        [--bench-python ...] [--extras-python ...] [--rounds 10] [--setups a,b]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from benchmarks import session
from benchmarks.common import MIB, RESULTS, ROOT, fingerprint, ran, span, write

CAP_AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
CAP_DEFAULT = {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"}

# name -> python role, environment, gate options, session options (dispatch, threads), what it emulates
SETUPS = {
    "reference": ("readme", {}, [], {}, "this host (AVX-512), a venv made by the README command, -n 2"),
    "avx2-host": ("readme", CAP_AVX2, [], {}, "a host whose CPU offers at most AVX2"),
    "no-avx2-host": ("readme", CAP_DEFAULT, [], {}, "a host whose CPU has no AVX2 (ATen default, oneDNN SSE4.1, MKL SSE4.2)"),
    "native": ("readme", {}, ["--gpu-budget-cpu-dispatch=native"], {"dispatch": "native"},
               "this host with the pin off: the libraries pick AVX-512 kernels"),
    "serial": ("readme", {}, ["-p", "no:xdist"], None, "a serial run on the 2 cores"),
    "two-threads": ("readme", {}, ["--gpu-budget-threads=2"], {"threads": 2}, "two torch threads per child"),
    "bench-extra": ("bench", {}, [], {}, "a venv with the bench extra (memray, pytest-memray, matplotlib)"),
    "extras": ("extras", {}, [], {}, "the machine's own Python, a hundred packages installed beside (boto3, trio, ...)"),
}
# detection: memtest baseline entries of the configurations benchmarks.common.scenarios() names
CASES = {
    "s1 truncate": ("test_s1_wav2vec2", "test_fixed_truncate::truncate"),
    "s5 as-reported": ("test_s5_generic_oom", "test_as_reported::as-reported"),
}
FRACTION = 0.02


def _python(role: str, args) -> str | None:
    return {"readme": args.readme_python, "bench": args.bench_python, "extras": args.extras_python}[role]


def gate(name: str, python: str, env: dict, options: list[str]) -> dict:
    """The whole tiny gate under one setup, against the committed baselines; its rows, as the JSON report has them."""
    with tempfile.TemporaryDirectory(prefix="bench-setup-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [python, "-m", "pytest", "--gpu-budget", "memtests", "-p", "no:cacheprovider", "-q",
               f"--gpu-budget-json={report}", *(["-n", "2"] if "no:xdist" not in options else []), *options]
        t0 = time.monotonic()
        done = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "CI": "true", **env}, capture_output=True, text=True, check=False)
        wall = time.monotonic() - t0
        print(f"setups: gate {name}: exit {done.returncode} in {wall:.0f} s: {done.stdout.strip().splitlines()[-1:]}", flush=True)
        data = json.loads(report.read_text())
    keep = ("nodeid", "verdict", "passed", "peaks", "change", "setup", "fingerprint_changed", "message", "tolerance")
    rows = [{k: r.get(k) for k in keep} | {"baseline": (r.get("baseline") or {}).get("peaks")} for r in data["results"]]
    hardware = {k: v for k, v in (data["hardware"] or {}).items() if k != "package_versions"}
    return {"exit": done.returncode, "wall_s": round(wall, 1), "hardware": hardware, "gate_problems": data["gate_problems"],
            "rows": rows}


def committed_entry(module: str, test_id: str) -> tuple[dict, dict | None]:
    from gpu_budget.judge import baselines, files

    folder = next(p for p in (ROOT / "baselines").iterdir() if p.name.startswith("cpu-"))
    data = files.load(folder / f"{module}.json")
    entry = baselines.lookup(data, "tiny", test_id)
    return entry, baselines.packages_of(data, entry)


def detection(name: str, python: str, env: dict, options: dict, rounds: int) -> dict:
    """`rounds` fresh sessions of clean and planted runs, judged against the committed baselines as the gate would."""
    from gpu_budget.declare.marks import DEFAULT_TOLERANCE
    from gpu_budget.judge.compare import judge
    from gpu_budget.judge.fingerprint import between
    from gpu_budget.model.budget import Budget
    from gpu_budget.model.entry import Entry
    from gpu_budget.model.figures import Peaks
    from gpu_budget.model.result import Measurement

    entries = {case: committed_entry(*where) for case, where in CASES.items()}
    jobs = []
    for case, (entry, _) in entries.items():
        plant = int(entry["peaks"]["ram"] * FRACTION)
        jobs += [{"case": case, "kind": "clean"}, {"case": case, "kind": "bytes", "plant_bytes": plant},
                 {"case": case, "kind": "tensor", "plant_tensor_bytes": plant}]
    runs = []
    for i in range(rounds):
        print(f"setups: detection {name}: session {i + 1} of {rounds}", flush=True)
        k = i % len(jobs)
        done = session.fresh_session(jobs[k:] + jobs[:k], python=python, env=env, **options)
        fprint = {k: v for k, v in done["fingerprint"].items() if k not in ("key", "package_versions")}
        for run in done["runs"]:
            entry, packages = entries[run["case"]]
            setup = between(entry["fingerprint"], fprint, packages, done["fingerprint"]["package_versions"])
            measured = Measurement(status="ok", peaks=Peaks.from_json(run["peaks"]))
            verdict = judge(measured, Budget(), Entry.from_json(entry), DEFAULT_TOLERANCE, ci=True, update=False,
                            setup=setup)
            runs.append({"session": i, **run, "verdict": verdict.verdict, "change": verdict.change,
                         "policy": setup.policy, "floor_shift": setup.floor_shift, "differs": list(setup.described)})
    return {"rounds": rounds, "fraction": FRACTION, "runs": runs,
            "baselines": {case: entry["peaks"] for case, (entry, _) in entries.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="gate,detection")
    parser.add_argument("--readme-python", required=True, help="python of a venv made by the README command alone")
    parser.add_argument("--bench-python", help="python of a venv with the bench extra")
    parser.add_argument("--extras-python", help="a python with many packages installed beside the project")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--setups", default=",".join(SETUPS))
    args = parser.parse_args()
    path = RESULTS / "setups.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    results = {"gate": old.get("gate", {}), "detection": old.get("detection", {})}
    for name in args.setups.split(","):
        role, env, options, session_options, what = SETUPS[name]
        python = _python(role, args)
        if python is None:
            print(f"setups: {name} skipped: no --{role}-python given", flush=True)
            continue
        ran = {"commit": fingerprint()["commit"], "date": time.strftime("%Y-%m-%d %H:%M")}  # setups may run apart
        if "gate" in args.part:
            results["gate"][name] = {"emulates": what, "env": env, "options": options, **ran, **gate(name, python, env, options)}
        if "detection" in args.part and session_options is not None:
            results["detection"][name] = {"emulates": what, **ran, **detection(name, python, env, session_options, args.rounds)}
        base = subprocess.run(["git", "log", "-1", "--format=%h", "--", "baselines"], cwd=ROOT, capture_output=True,
                              text=True, check=False).stdout.strip()
        write("setups", {"tolerance_note": "judged by gpu_budget.judge.compare.judge at the default tolerance",
                         "baselines_commit": base or None, **results})


# -- RESULTS.md section 7, from this script's JSON (benchmarks/report.py joins the sections) -------------------------

def setup_gate_rows(gate: dict) -> dict:
    """Per setup: verdict counts and the range of each gated metric's change against its baseline."""
    out = {}
    for name, g in gate.items():
        measured = [r for r in g["rows"] if r["verdict"] not in ("skipped",)]
        verdicts = defaultdict(int)
        for r in measured:
            verdicts[r["verdict"] + ("" if r["passed"] else " FAIL")] += 1
        changes = {m: [r["change"][m] for r in measured if (r.get("change") or {}).get(m) is not None] for m in ("ram", "ram_tensor")}
        # every row's floor-corrected change, compared or not (a foreign setup's shows why it is not)
        pairs = [(r["peaks"]["ram"] - (r["setup"] or {}).get("floor_shift", 0), r["baseline"]["ram"])
                 for r in measured if r.get("baseline") and r["peaks"].get("ram") and r["baseline"].get("ram")]
        deltas = [(now - then) / MIB for now, then in pairs]
        changes["ram"] = [(now - then) / then for now, then in pairs]
        tensor_bytes = [r["peaks"]["ram_tensor"] - r["baseline"]["ram_tensor"] for r in measured
                        if r.get("baseline") and r["peaks"].get("ram_tensor") is not None and r["baseline"].get("ram_tensor") is not None]
        shifts = {round((r["setup"] or {}).get("floor_shift", 0) / MIB, 1) for r in measured if r.get("setup")}
        differs = sorted({d for r in measured for d in (r.get("fingerprint_changed") or [])})
        policies = sorted({(r["setup"] or {}).get("policy") or "same" for r in measured if r.get("setup")})
        out[name] = {"n": len(measured), "failed": sum(not r["passed"] for r in measured), "verdicts": dict(verdicts),
                     "changes": changes, "deltas": deltas, "tensor_bytes": tensor_bytes, "shifts": sorted(shifts), "differs": differs, "policies": policies,
                     "problems": g.get("gate_problems", [])}
    return out


COMPARED_AS = {"same": "as usual", "floor": "floor taken off", "setup": "floor taken off, test's tolerance",
               "foreign": "not compared"}


def setups_summary(su: dict, rows: dict, tol) -> list[str]:
    """What the tables say, from their figures: the spread where host RAM is compared, what it is not, and misses."""
    compared = {n: r for n, r in rows.items() if "foreign" not in r["policies"]}
    foreign = {n: r for n, r in rows.items() if "foreign" in r["policies"]}
    deltas = [d for r in compared.values() for d in r["deltas"]]
    changes = [c for r in compared.values() for c in r["changes"]["ram"]]
    tensors = [b for r in rows.values() for b in r["tensor_bytes"]]
    out = [(f"**Tolerance.** Where host RAM is compared ({', '.join(compared)}), the clean change against the baseline, "
            f"floor taken off, lay within {span(deltas, '+.1f')} MiB ({span(changes, '+.2%')}) over "
            f"{sum(r['n'] for r in compared.values())} case runs, {sum(r['failed'] for r in compared.values())} of them "
            f"failed: inside the default tolerance (rel {tol.rel:.1%} + {tol.abs / MIB:.0f} MiB), so no wider one is used "
            "across these setups. Tensor bytes matched the baselines within "
            f"{span(tensors, '+d')} B in every setup.")]
    for name, r in foreign.items():
        out[-1] += (f" With {name} ({'; '.join(r['differs'])}) host RAM moved {span(r['changes']['ram'], '+.2%')}: "
                    "more than a 2 % regression, so such a baseline is not compared on host RAM (the row says to record "
                    "one for that setup); tensor bytes still are.")
    misses = []
    for name, d in su.get("detection", {}).items():
        for case in d["baselines"]:
            runs = [x for x in d["runs"] if x["case"] == case]
            clean = [x["change"].get("ram") for x in runs if x["kind"] == "clean" and x["change"].get("ram") is not None]
            missed = sum(x["verdict"] != "regression" for x in runs if x["kind"] == "bytes")
            if missed and clean and "foreign" not in {x["policy"] for x in runs}:
                misses.append(f"{case} on {name} ({missed} of {sum(x['kind'] == 'bytes' for x in runs)} missed; its clean "
                              f"runs sat {span(clean, '+.2%')} from the baseline)")
    if misses:
        out += ["", ("**What a setup can hide.** A planted tensor is flagged 10 of 10 in every setup (tensor bytes are exact). "
                     "Planted bytes, which only host RAM sees, are missed where a setup lowers host RAM by about the tolerance's "
                     "margin: " + "; ".join(misses) + ". A runner of that kind gates host RAM at full sensitivity only against "
                     "baselines recorded on its own kind (`--gpu-budget-update` there).")]
    return out


def section(su: dict | None) -> list[str]:
    """Section 7 from setups.json: the tiny gate and planted regressions across emulated setups."""
    from gpu_budget.declare.marks import DEFAULT_TOLERANCE as TOL

    out = ["## 7. Across setups: one host standing in for other machines", ""]
    if su is None:
        return out + [("_Not run yet: `python -m benchmarks.setups --readme-python PATH` writes "
                       "`benchmarks/results/setups.json`._"), ""]
    out += [ran(su), "",
            ("Each setup emulates a runner on this host (`benchmarks/setups.py`): a Python environment and what the "
             "environment or the options change. **Gate**: the whole tiny gate (`pytest --gpu-budget memtests`, `CI=true`) "
             f"against the tiny baselines committed at `{su.get('baselines_commit', '?')}` (recorded in a venv made by the README "
             "command, on this AVX-512 host, kernels pinned at AVX2, one thread per child; the rows name the commit each "
             "setup ran at, both measuring the host RAM the same way). The host RAM change is the peak with the difference of the "
             "import floors taken off, against the baseline (`fingerprint.py`, `compare.py`)."), "",
            "| setup | emulates | ran at | cases | failed | host RAM vs baseline (MiB) | host RAM (%) | tensor bytes vs baseline (B) | import floor (MiB) | fingerprint differs | host RAM compared as |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = setup_gate_rows(su.get("gate", {}))
    for name, r in rows.items():
        g = su["gate"][name]
        out.append(f"| {name} | {g['emulates']} | `{g.get('commit', '?')}` | {r['n']} | {r['failed']} | {span(r['deltas'], '+.1f')} | "
                   f"{span(r['changes']['ram'], '+.2%')} | {span(r['tensor_bytes'], '+d')} | "
                   f"{', '.join(f'{x:+.1f}' for x in r['shifts']) or '-'} | {'; '.join(r['differs']) or '-'} | "
                   f"{', '.join(COMPARED_AS.get(p, p) for p in r['policies'])} |")
    problems = {n: r["problems"] for n, r in rows.items() if r["problems"]}
    if problems:
        out += ["", "Gate problems: " + "; ".join(f"{n}: {', '.join(p)}" for n, p in problems.items())]
    det = su.get("detection", {})
    if det:
        out += ["", ("**Detection**: per setup, fresh sessions each measuring the cases clean and with a planted regression of "
                     f"+{next(iter(det.values()))['fraction']:.0%} of the baseline's host RAM peak, retained for the whole run: as "
                     "bytes (only host RAM sees them) and as a tensor (tensor bytes see it too); judged by the gate's `judge` "
                     f"against the committed baselines with the setup's fingerprint difference, at the default tolerance "
                     f"(rel {TOL.rel:.1%} + {TOL.abs / MIB:.0f} MiB)."), "",
                "| setup | case | compared as | clean flagged | +bytes flagged | +tensor flagged | clean host RAM change (min .. max) |",
                "|---|---|---|---|---|---|---|"]
        for name, d in det.items():
            for case in d["baselines"]:
                runs = [r for r in d["runs"] if r["case"] == case]
                cell = {k: [r for r in runs if r["kind"] == k] for k in ("clean", "bytes", "tensor")}
                flag = {k: f"{sum(r['verdict'] == 'regression' for r in v)} of {len(v)}" for k, v in cell.items()}
                policy = ", ".join(sorted({r["policy"] or "same" for r in runs}))
                clean = [r["change"]["ram"] for r in cell["clean"] if r["change"].get("ram") is not None]
                out.append(f"| {name} | {case} | {', '.join(COMPARED_AS.get(p, p) for p in policy.split(', '))} | {flag['clean']} | {flag['bytes']} | {flag['tensor']} | "
                           f"{span(clean, '+.2%')} |")
    return out + [""] + setups_summary(su, rows, TOL) + [""]


def headline(su: dict | None) -> list[str]:
    """The headline's lines for section 7: the tiny gate across emulated setups, and planted +2 % there."""
    if not (su and su.get("gate")):
        return []
    rows = setup_gate_rows(su["gate"])
    compared = [d for r in rows.values() if "foreign" not in r["policies"] for d in r["deltas"]]
    out = [(f"- Across {len(rows)} emulated setups, the tiny gate failed {sum(r['failed'] for r in rows.values())} of "
            f"{sum(r['n'] for r in rows.values())} measured cases; where host RAM is compared (all but AVX-512 kernels "
            f"on one side), it stayed within {span(compared, '+.1f')} MiB of the baselines, floor taken off.")]
    det_su = su.get("detection", {})
    if det_su:
        runs = [x | {"setup": n} for n, d in det_su.items() for x in d["runs"]]
        count = {k: (sum(x["verdict"] == "regression" for x in runs if x["kind"] == k), sum(x["kind"] == k for x in runs))
                 for k in ("clean", "bytes", "tensor")}
        out.append(f"- Planted +2 % across {len(det_su)} setups, 10 fresh sessions each: a tensor flagged {count['tensor'][0]} "
                   f"of {count['tensor'][1]}, bytes {count['bytes'][0]} of {count['bytes'][1]} (host RAM not compared "
                   f"or shifted down: section 7), clean runs flagged {count['clean'][0]} of {count['clean'][1]}.")
    return out


if __name__ == "__main__":
    main()
