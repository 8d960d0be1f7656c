"""Where a session's measured children run: the GPUs and the cores of each xdist worker, and of a serial run.

Each xdist worker gets its GPUs (one by default; N for cases that launch N
ranks, --gpu-budget-gpus-per-worker) picked by its worker id, disjoint from
the other workers' where the host has enough, and its own equal share of the
cores (place(); xdist.py applies it before the worker's forkserver starts). A
serial run measures on as many GPUs as one worker would.

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
from collections.abc import Mapping, MutableMapping
from dataclasses import asdict, dataclass, replace


@dataclass(frozen=True)
class Placement:
    """Where one worker measures: its GPU (a CUDA_VISIBLE_DEVICES value) and its cores; `seen`: the GPUs a case's
    processes saw instead, where the case set CUDA_VISIBLE_DEVICES itself ("": none), which CUDA obeys over the
    worker's."""

    worker: str
    gpu: str | None
    cpus: tuple[int, ...]
    seen: str | None = None

    @property
    def on(self) -> str | None:
        """The GPUs the case measured on (None: none)."""
        return self.gpu if self.seen is None else self.seen or None

    def as_run(self, environ: Mapping[str, str]) -> Placement:
        """This placement as a case whose processes run with `environ` (the test's environment, a command's env=
        over it) saw it: a CUDA_VISIBLE_DEVICES there that names other GPUs than the worker's is what they ran on,
        so two workers may have shared a card."""
        seen = ",".join(visible_gpus(environ))
        return self if (seen or None) == self.gpu else replace(self, seen=seen)

    def to_json(self) -> dict[str, str | list[int] | None]:
        return asdict(self) | {"cpus": list(self.cpus)}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Placement:
        cpus = data.get("cpus")
        return cls(str(data["worker"]), None if data.get("gpu") is None else str(data["gpu"]),
                   tuple(int(c) for c in cpus) if isinstance(cpus, list) else (),
                   None if data.get("seen") is None else str(data["seen"]))


def visible_gpus(environ: Mapping[str, str] = os.environ) -> list[str]:
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


def place(worker: str, index: int, count: int, gpus: list[str], cpus: list[int], per_worker: int = 1) -> Placement:
    """Worker `index` of `count`: `per_worker` GPUs of its own, and an equal, disjoint share of `cpus`.

    The GPUs come in blocks of `per_worker`, block index % blocks (round robin
    once there are more workers than blocks); where the host has fewer than
    `per_worker`, the worker gets all it has, and a case that needs more skips
    (case.py). Cores left over by the division stay unused, so every worker has
    the same share; with more workers than cores, workers share cores one each.
    """
    blocks = len(gpus) // per_worker
    block = gpus[(index % blocks) * per_worker:(index % blocks + 1) * per_worker] if blocks else gpus
    gpu = ",".join(block) or None
    cpus = sorted(cpus)
    size = len(cpus) // count
    share = cpus[index * size:(index + 1) * size] if size else [cpus[index % len(cpus)]]
    return Placement(worker, gpu, tuple(share))


def worker_index(worker: str) -> int:
    return int(worker.lstrip("gw")) if worker.lstrip("gw").isdigit() else 0


def pin_gpus(environ: MutableMapping[str, str], count: int = 1) -> str | None:
    """Pin `environ` to the first `count` visible GPUs when more are visible; the GPUs pinned, or None."""
    gpus = visible_gpus(environ)
    if len(gpus) <= count:
        return None
    environ["CUDA_VISIBLE_DEVICES"] = ",".join(gpus[:count])
    return environ["CUDA_VISIBLE_DEVICES"]
