"""The body of a measured (or preparing) child process.

Everything it learns goes out as JSON lines to a file, one line per finished
phase, so a child killed mid-run (OOM killer, timeout) still leaves what it
measured. The parent (isolate.py) turns the lines into a Measurement.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path


def _pin_threads(threads: int) -> None:
    """Fix the thread count: with 2 cores and a busy neighbour an unpinned step ran 18x slower."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    if "torch" in sys.modules:  # preloaded by the forkserver; never imported here for nothing
        sys.modules["torch"].set_num_threads(threads)


def _device() -> str:
    from gpu_budget.meter import cuda_available

    return "cuda" if cuda_available() else "cpu"


def main(request: dict, out_path: str) -> None:
    """Run request["scenario"]'s prepare or run function and stream the outcome to out_path."""
    from gpu_budget.meter import Meter
    from gpu_budget.scenario import RunContext, resolve_ref

    out = open(out_path, "a", buffering=1)

    def emit(event: dict) -> None:
        out.write(json.dumps(event, default=str) + "\n")
        out.flush()

    scenario = request.get("scenario", {})
    meter = None
    try:
        _pin_threads(request["threads"])
        if request["mode"] == "probe":
            from gpu_budget.meter import device_info

            emit({"event": "device", **device_info()})
            return
        assets = Path(request["assets"])
        if request["mode"] == "prepare":
            ctx = RunContext(scenario["scale"], scenario["params"], tuple(scenario["fixes"]), assets, _device())
            resolve_ref(scenario["prepare"])(ctx)
            emit({"event": "prepared"})
            return
        run = resolve_ref(scenario["run"])  # imports the scenario's module (and torch) before measuring
        _pin_threads(request["threads"])
        meter = Meter(on_phase=lambda rec: emit({"event": "phase", **rec.to_json()}))
        ctx = RunContext(scenario["scale"], scenario["params"], tuple(scenario["fixes"]), assets,
                         "cuda" if meter.use_cuda else "cpu", meter)
        emit({"event": "start", "pid": os.getpid(), "cuda": meter.use_cuda, "ram_method": meter.ram_method})
        # a planted regression: retained, touched bytes for the whole run (proves the gate can fail)
        planted = b"\x01" * int(scenario["params"].get("plant_bytes", 0))  # noqa: F841
        info = run(ctx) or {}
        meter.stop()
        emit({"event": "result", "summary": meter.summary(), "info": {**meter.info, **info}})
    except BaseException as exc:  # a crash is data: report it, with what was measured so far
        if meter is not None:
            meter.stop()
        oom = type(exc).__name__ == "OutOfMemoryError" or isinstance(exc, MemoryError)
        emit({
            "event": "error",
            "kind": "oom" if oom else "exception",
            "type": f"{type(exc).__module__}.{type(exc).__qualname__}",
            "message": str(exc)[:2000],
            "traceback": traceback.format_exc()[-8000:],
            "info": dict(meter.info) if meter is not None else {},
        })
    finally:
        out.close()
