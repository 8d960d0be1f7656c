"""Measure a list of cases in one fresh session: a new `python` process with its own forkserver.

A gate run is a session; what must repeat is a case's peak across sessions,
so repeatability, detection and the across-setups section run each repetition
through here. A job names a configuration from common.scenarios(), the
allocator mode, and optionally planted bytes (the reserved scenario params
plant_bytes, retained and touched for the whole run, and plant_tensor_bytes,
the same as a tensor). A session may run under another setup: another Python
(a venv), extra environment variables, a kernel-dispatch mode and a thread
count; it reports its fingerprint as the gate would record it.

    python -m benchmarks.session JOBS.json OUT.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common import ROOT, THREADS, gate_preload, scenarios

ASSETS = Path(tempfile.gettempdir()) / "gpu-budget-bench"


def fresh(jobs: list[dict]) -> list[dict]:
    """Run `jobs` in a new python process (a fresh session); their results in order."""
    return fresh_session(jobs)["runs"]


def fresh_session(jobs: list[dict], python: str = sys.executable, env: dict | None = None,
                  dispatch: str = "avx2", threads: int = THREADS) -> dict:
    """Run `jobs` in a new session of `python` with `env` added: {"fingerprint": ..., "runs": [...]}."""
    with tempfile.TemporaryDirectory(prefix="bench-session-") as tmp:
        src, dst = Path(tmp) / "jobs.json", Path(tmp) / "out.json"
        src.write_text(json.dumps({"jobs": jobs, "dispatch": dispatch, "threads": threads}))
        subprocess.run([python, "-m", "benchmarks.session", str(src), str(dst)], cwd=ROOT, check=True,
                       env={**os.environ, **(env or {})})
        return json.loads(dst.read_text())


def run(spec: dict) -> dict:
    from gpu_budget.isolate import forkserver
    from gpu_budget.measure import host

    jobs, dispatch, threads = spec["jobs"], spec.get("dispatch", "avx2"), spec.get("threads", THREADS)
    preload, chosen, out = gate_preload(), scenarios(), []
    device = forkserver.probe(preload=preload, dispatch_mode=dispatch)
    fprint = host.collect(device, host.hardware_key(device.device), forkserver.forkserver_environ(dispatch),
                          threads, "steady", dispatch, preload)
    for position, job in enumerate(jobs):
        scn = chosen[job["case"]]
        assets = ASSETS / scn.asset_key("tiny")  # planted bytes change no asset: the clean scenario's
        if scn.prepare:
            forkserver.prepare_assets(scn.to_json("tiny"), assets, 1800, 2, preload, dispatch_mode=dispatch)
        plants = {k: int(job[k]) for k in ("plant_bytes", "plant_tensor_bytes") if job.get(k)}
        if plants:
            scn = scn.with_params(**plants)
        m = forkserver.measure(scn.to_json("tiny"), assets, 1800, threads, preload, malloc=job.get("malloc", "steady"),
                            dispatch_mode=dispatch)
        if not m.ok:
            raise RuntimeError(f"{job}: {m.error}")
        out.append({**job, "position": position, "peaks": m.peaks.to_json(), "step_ram": m.step_peaks.ram,
                    "wall_s": m.wall_seconds, "info_malloc": m.info.get("malloc")})
        planted = sum(plants.values()) / 2**20
        print(f"  {job['case']} ({job.get('malloc', 'steady')}, planted {planted:.1f} MiB): "
              f"{m.peaks.ram / 2**20:.1f} MiB", flush=True)
    return {"fingerprint": fprint, "runs": out}


if __name__ == "__main__":
    spec = json.loads(Path(sys.argv[1]).read_text())
    Path(sys.argv[2]).write_text(json.dumps(run(spec if isinstance(spec, dict) else {"jobs": spec})))
