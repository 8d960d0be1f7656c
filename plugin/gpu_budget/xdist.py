"""pytest-xdist: one worker per GPU (or per share of the cores); workers measure, the controller records.

Registered only when xdist is installed (pytest_plugin.py). Two jobs:

- Placement. On a worker of a `--gpu-budget` run, before its forkserver
  starts, `CUDA_VISIBLE_DEVICES` is set to one GPU picked by the worker id
  (gw0 -> the first visible GPU, gw1 -> the second, round robin past the
  last), and the worker's CPU affinity to its own equal share of the cores.
  The forkserver, and so every measured child, inherits both; the children
  run the session's thread count (one by default, as in a serial run, so
  both give the same peaks). On a CPU host two workers then never measure
  while fighting over one core.
- Records. Workers never write baselines or reports. They ship their
  SessionData (session_data.py: result rows, notes, explorations, the
  baseline entries to write, which budget tests they collected and whether
  the selection was narrowed) through `workeroutput`; the controller merges
  it and alone writes baselines (baselines.store) and the outputs
  (outputs.py: the terminal's tables, the JSON report, the step summary, the
  plots).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass

from gpu_budget.session_data import SessionData

_OUTPUT_KEY = "gpu_budget"


@dataclass(frozen=True)
class Placement:
    """Where one worker measures: its GPU (a CUDA_VISIBLE_DEVICES value) and its cores."""

    worker: str
    gpu: str | None
    cpus: tuple[int, ...]

    def to_json(self) -> dict:
        return asdict(self) | {"cpus": list(self.cpus)}


def visible_gpus(environ: os._Environ | dict = os.environ) -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES items; found without importing torch.

    An explicit CUDA_VISIBLE_DEVICES wins (CUDA stops at its first invalid
    item, e.g. "-1", so the list does too); otherwise the driver's
    /proc/driver/nvidia/gpus entries, else `nvidia-smi --list-gpus`.
    """
    value = environ.get("CUDA_VISIBLE_DEVICES")
    if value is not None:
        out = []
        for item in (v.strip() for v in value.split(",")):
            if not item or item.startswith("-"):
                break
            out.append(item)
        return out
    try:
        return [str(i) for i in range(len(os.listdir("/proc/driver/nvidia/gpus")))]
    except OSError:
        pass
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            listing = subprocess.run([smi, "--list-gpus"], check=False, capture_output=True, text=True,
                                     timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            return []
        return [str(i) for i, line in enumerate(line for line in listing.splitlines() if line.startswith("GPU "))]
    return []


def place(worker: str, index: int, count: int, gpus: list[str], cpus: list[int]) -> Placement:
    """Worker `index` of `count`: GPU index % len(gpus), and an equal, disjoint share of `cpus`.

    Cores left over by the division stay unused, so every worker has the same
    share; with more workers than cores, workers share cores one each.
    """
    gpu = gpus[index % len(gpus)] if gpus else None
    cpus = sorted(cpus)
    size = len(cpus) // count
    share = cpus[index * size:(index + 1) * size] if size else [cpus[index % len(cpus)]]
    return Placement(worker, gpu, tuple(share))


def worker_index(worker: str) -> int:
    return int(worker.lstrip("gw")) if worker.lstrip("gw").isdigit() else 0


class XdistBudget:
    """The xdist side of BudgetSession: places workers, ships their SessionData, merges it on the controller."""

    def __init__(self, session) -> None:
        self.session = session
        workerinput = getattr(session.config, "workerinput", None)
        if workerinput is not None and session.options.enabled:
            self._place(workerinput)

    def _place(self, workerinput: dict) -> None:
        worker = workerinput["workerid"]
        placement = place(worker, worker_index(worker), int(workerinput["workercount"]),
                          visible_gpus(), list(os.sched_getaffinity(0)))
        if placement.gpu is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = placement.gpu
        os.sched_setaffinity(0, placement.cpus)  # the forkserver and its children inherit the mask
        self.session.place(placement.to_json())

    # -- worker -------------------------------------------------------------
    def pytest_sessionfinish(self, session) -> None:
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[_OUTPUT_KEY] = json.dumps(self.session.data.to_json())

    # -- controller ---------------------------------------------------------
    def pytest_testnodedown(self, node, error) -> None:
        output = getattr(node, "workeroutput", None) or {}
        if _OUTPUT_KEY in output:
            self.session.data.merge(SessionData.from_json(json.loads(output[_OUTPUT_KEY])))
