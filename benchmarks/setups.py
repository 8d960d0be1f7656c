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
from pathlib import Path

from benchmarks import session
from benchmarks.common import RESULTS, ROOT, fingerprint, write

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
    keep = ("nodeid", "verdict", "passed", "peaks", "change", "setup", "fingerprint_changed", "message")
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
    from gpu_budget.declare.scenario import Budget
    from gpu_budget.judge.baselines import Entry
    from gpu_budget.judge.compare import Setup, judge
    from gpu_budget.results import NO_PEAKS, Measurement

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
            setup = Setup.between(entry["fingerprint"], fprint, packages, done["fingerprint"]["package_versions"])
            measured = Measurement(status="ok", peaks={**NO_PEAKS, **run["peaks"]})
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


if __name__ == "__main__":
    main()
