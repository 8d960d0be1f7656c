"""Measure a list of cases in one fresh session: a new `python` process with its own forkserver.

A gate run is a session; what must repeat is a case's peak across sessions,
so repeatability and detection run each repetition through here. A job names
a configuration from common.scenarios(), the allocator mode, and optionally
planted bytes (the reserved scenario param plant_bytes: retained, touched for
the whole run).

    python -m benchmarks.session JOBS.json OUT.json
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common import ROOT, THREADS, gate_preload, scenarios

ASSETS = Path(tempfile.gettempdir()) / "gpu-budget-bench"


def fresh(jobs: list[dict]) -> list[dict]:
    """Run `jobs` in a new python process (a fresh session); their results in order."""
    with tempfile.TemporaryDirectory(prefix="bench-session-") as tmp:
        src, dst = Path(tmp) / "jobs.json", Path(tmp) / "out.json"
        src.write_text(json.dumps(jobs))
        subprocess.run([sys.executable, "-m", "benchmarks.session", str(src), str(dst)], cwd=ROOT, check=True)
        return json.loads(dst.read_text())


def run(jobs: list[dict]) -> list[dict]:
    from gpu_budget import isolate

    preload, chosen, out = gate_preload(), scenarios(), []
    for position, job in enumerate(jobs):
        scn = chosen[job["case"]]
        assets = ASSETS / scn.asset_key("tiny")  # planted bytes change no asset: the clean scenario's
        if scn.prepare:
            isolate.prepare_assets(scn.to_json("tiny"), assets, 1800, THREADS, preload)
        if job.get("plant_bytes"):
            scn = scn.with_params(plant_bytes=int(job["plant_bytes"]))
        m = isolate.measure(scn.to_json("tiny"), assets, 1800, THREADS, preload, malloc=job.get("malloc", "steady"))
        if m["status"] != "ok":
            raise RuntimeError(f"{job}: {m['error']}")
        out.append({**job, "position": position, "peaks": m["peaks"], "step_ram": m["step_peaks"]["ram"],
                    "wall_s": m["wall_seconds"], "info_malloc": m["info"].get("malloc")})
        print(f"  {job['case']} ({job.get('malloc', 'steady')}, planted {job.get('plant_bytes', 0) / 2**20:.1f} MiB): "
              f"{m['peaks']['ram'] / 2**20:.1f} MiB", flush=True)
    return out


if __name__ == "__main__":
    Path(sys.argv[2]).write_text(json.dumps(run(json.loads(Path(sys.argv[1]).read_text()))))
