"""A serial run measures on one GPU, as each xdist worker does (xdist.py places those).

On a host with several GPUs visible, a child that sees them all trains
differently: the Trainer wraps the model in DataParallel over every visible
GPU, and the figures are then of a different program. So before the
forkserver starts (it and every child inherit the environment), a serial
session sets CUDA_VISIBLE_DEVICES to the first visible GPU. A run that sets
CUDA_VISIBLE_DEVICES to one GPU itself keeps it; found without importing torch.
"""

from __future__ import annotations

from collections.abc import MutableMapping

from gpu_budget.xdist import visible_gpus


def one_gpu(environ: MutableMapping[str, str]) -> str | None:
    """Pin `environ` to the first visible GPU when more than one is visible; the GPU pinned, or None."""
    gpus = visible_gpus(environ)
    if len(gpus) <= 1:
        return None
    environ["CUDA_VISIBLE_DEVICES"] = gpus[0]
    return gpus[0]
