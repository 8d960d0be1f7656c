"""Where a session's measured children run: the GPU and the cores of each xdist worker, one GPU for a serial run.

Each xdist worker gets one GPU picked by its worker id and its own equal
share of the cores (place(); xdist.py applies it before the worker's
forkserver starts). A serial run measures on one GPU, as each xdist worker does.

On a host with several GPUs visible, a child that sees them all trains
differently: the Trainer wraps the model in DataParallel over every visible
GPU, and the figures are then of a different program. So before the
forkserver starts (it and every child inherit the environment), a serial
session sets CUDA_VISIBLE_DEVICES to the first visible GPU. A run that sets
CUDA_VISIBLE_DEVICES to one GPU itself keeps it; found without importing torch.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import MutableMapping
from dataclasses import asdict, dataclass


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


def one_gpu(environ: MutableMapping[str, str]) -> str | None:
    """Pin `environ` to the first visible GPU when more than one is visible; the GPU pinned, or None."""
    gpus = visible_gpus(environ)
    if len(gpus) <= 1:
        return None
    environ["CUDA_VISIBLE_DEVICES"] = gpus[0]
    return gpus[0]
