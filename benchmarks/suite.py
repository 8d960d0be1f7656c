"""Section 6, suite time: the whole tiny CPU gate and the real-scale CPU cases, wall time, as subprocesses.

Runs the README's gate command as a user would, against a temporary copy of
baselines/ (so nothing in the repository is written; a case without a baseline
is recorded into the copy, not failed), and keeps the per-case wall time from
the JSON report. Heavy: the whole machine for minutes (the real scale holds
wav2vec2-base and Paraformer-large runs of several GiB); run it when the
machine is otherwise quiet.

    python -m benchmarks.suite [--parts tiny,real] [--select memtests/...]   (or: python -m benchmarks.run --only suite)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, write

PARTS = {
    "tiny": ["--gpu-budget-scale", "tiny", "-n", "2"],  # the README's gate command
    "real": ["--gpu-budget-scale", "real"],              # serial: one multi-GiB case at a time
}
SUMMARY = re.compile(r"^=* ?(\d+ (?:passed|failed|skipped|errors?|deselected)\b.* in [\d.]+s.*?) ?=*$", re.MULTILINE)


def run_part(part: str, select: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"bench-suite-{part}-") as tmp:
        baselines = Path(tmp) / "baselines"
        shutil.copytree(ROOT / "baselines", baselines)
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pytest", "--gpu-budget", *(select or ["memtests"]), *PARTS[part],
               "--gpu-budget-baselines", str(baselines), "--gpu-budget-json", str(report), "-p", "no:cacheprovider", "-q"]
        env = {k: v for k, v in os.environ.items() if k != "CI"}  # CI would fail cases without a baseline
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        found = SUMMARY.findall(proc.stdout)
        rows = json.loads(report.read_text())["results"] if report.exists() else []
    shown = ["pytest", *cmd[3:]]
    shown[shown.index("--gpu-budget-baselines") + 1] = "<copy of baselines/>"
    shown[shown.index("--gpu-budget-json") + 1] = "<report.json>"
    return {"part": part, "command": " ".join(shown), "wall_s": wall, "exit_code": proc.returncode,
            "summary": found[-1] if found else "(no pytest summary line: " + proc.stdout.strip()[-300:] + ")",
            "cases": [{"nodeid": r.get("nodeid"), "verdict": r.get("verdict"), "wall_s": r.get("wall_seconds"),
                       "ram": (r.get("peaks") or {}).get("ram")} for r in rows]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="tiny,real")
    parser.add_argument("--select", default="", help="comma-separated node ids or paths (default: memtests)")
    args = parser.parse_args()
    select = [s for s in args.select.split(",") if s]
    parts = []
    for part in args.parts.split(","):
        print(f"suite: {part} ...", flush=True)
        parts.append(run_part(part, select))
        print(f"suite: {part}: {parts[-1]['wall_s']:.0f} s, {parts[-1]['summary']}", flush=True)
    write("suite", {"selection": select or ["memtests"], "parts": parts})


if __name__ == "__main__":
    main()
