"""Section 4, repeatability: the gated RAM peak of each scenario over fresh sessions, steady vs system malloc.

Each repetition is a fresh session (benchmarks/session.py: its own `python`
and forkserver with the gate's preload) measuring every configuration once in
a fresh child, in an order rotated session by session, so a position effect
(a forkserver's first child, say) shows up as spread instead of hiding. S1 is
measured under glibc's default allocator too, to show why children run under
the steady one. The widest steady spread sets the default tolerance.

The real-scale part (`--part real`, stored under "real" with its own run
fingerprint, the tiny part kept) measures the real-scale cases a user gates on
this CPU machine: each session is a fresh `pytest --gpu-budget
--gpu-budget-scale=real` process (its own forkserver) running the cases one
after another, serially, in an order rotated session by session, against a
temporary copy of baselines/ (nothing recorded); the peaks come from its
`--gpu-budget-json` report. Its widest relative spread sets the real-scale
default tolerance (gpu_budget.declare.marks.DEFAULT_TOLERANCE_BY_SCALE).

    python -m benchmarks.repeatability [--sessions 5]
    python -m benchmarks.repeatability --part real [--sessions 3]
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

from benchmarks import session
from benchmarks.common import RESULTS, ROOT, THREADS, fingerprint, scenarios, write

SYSTEM_MALLOC = ("s1 as-reported", "s1 truncate")  # also measured under glibc's defaults
REAL_CASES = {  # real-scale cases (name -> pytest node id); S1 as reported (~15 GiB) is left out
    "s1 truncate": "memtests/test_s1_wav2vec2.py::test_fixed_truncate",
    "s2 as-reported": "memtests/test_s2_paraformer.py::test_as_reported",
    "s5 as-reported": "memtests/test_s5_generic_oom.py::test_as_reported",
}
REAL_ARGS = ["--gpu-budget-scale", "real", "-p", "no:xdist", "--gpu-budget-timeout", "3600", "-p", "no:cacheprovider", "-q"]


def real_session(order: list[str]) -> list[dict]:
    """One fresh pytest session measuring the real-scale cases in `order`; a row per case from its JSON report."""
    with tempfile.TemporaryDirectory(prefix="bench-repeat-real-") as tmp:
        baselines, report = Path(tmp) / "baselines", Path(tmp) / "report.json"
        shutil.copytree(ROOT / "baselines", baselines)
        cmd = [sys.executable, "-m", "pytest", "--gpu-budget", *(REAL_CASES[c] for c in order), *REAL_ARGS,
               "--gpu-budget-baselines", str(baselines), "--gpu-budget-json", str(report)]
        env = {k: v for k, v in os.environ.items() if k != "CI"}
        load_start = os.getloadavg()[0]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        rows = json.loads(report.read_text())["results"] if report.exists() else []
    by_node = {r["nodeid"].split("::")[0] + "::" + r["nodeid"].split("::")[1]: r for r in rows}
    out = []
    for position, case in enumerate(order):
        r = by_node.get(REAL_CASES[case])
        if r is None or not (r.get("peaks") or {}).get("ram"):
            raise RuntimeError(f"{case}: no measurement (exit {proc.returncode}): {proc.stdout[-2000:]}")
        out.append({"case": case, "nodeid": r["nodeid"], "position": position, "peaks": r["peaks"],
                    "verdict": r.get("verdict"), "wall_s": r.get("wall_seconds"),
                    "load_average_start": round(load_start, 2), "load_average_end": round(os.getloadavg()[0], 2)})
        print(f"  {case}: {r['peaks']['ram'] / 2**20:.1f} MiB ({r.get('verdict')})", flush=True)
    return out


def real_part(sessions: int) -> None:
    """The real-scale part: `sessions` fresh pytest sessions; written after each, the tiny part kept."""
    path = RESULTS / "repeatability.json"
    previous = json.loads(path.read_text()) if path.exists() else {}
    names, runs = list(REAL_CASES), []
    for i in range(sessions):
        print(f"repeatability real: session {i + 1} of {sessions} ({time.strftime('%H:%M')})", flush=True)
        k = i % len(names)
        runs += [{"session": i, **r} for r in real_session(names[k:] + names[:k])]
        previous["real"] = {"run": fingerprint(), "sessions": i + 1, "cases": REAL_CASES,
                            "command": "pytest --gpu-budget <cases> " + " ".join(REAL_ARGS), "runs": runs}
        path.write_text(json.dumps(previous, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=None, help="fresh sessions (tiny: 5, real: 3)")
    parser.add_argument("--part", choices=("tiny", "real"), default="tiny")
    args = parser.parse_args()
    if args.part == "real":
        return real_part(args.sessions or 3)
    args.sessions = args.sessions or 5
    jobs = [{"case": name, "malloc": "steady"} for name in scenarios()]
    jobs += [{"case": name, "malloc": "system"} for name in SYSTEM_MALLOC]
    runs = []
    for i in range(args.sessions):
        print(f"repeatability: session {i + 1} of {args.sessions}", flush=True)
        k = i % len(jobs)
        runs += [{"session": i, **r} for r in session.fresh(jobs[k:] + jobs[:k])]
    previous = json.loads((RESULTS / "repeatability.json").read_text()) if (RESULTS / "repeatability.json").exists() else {}
    write("repeatability", {"threads": THREADS, "sessions": args.sessions, "runs": runs,
                            **({"real": previous["real"]} if "real" in previous else {})})


if __name__ == "__main__":
    main()
