"""The CUDA driver's compute cache, read from outside the child (a file walk, no CUDA call).

A kernel shipped as PTX only is compiled by the driver the first time a process
on the machine needs it, and kept in this cache. The compiler runs inside the
child, so its memory is in the child's host-RAM peak: on an H200 the first S1
child on a fresh machine read more than every later one, and every child did
with CUDA_CACHE_DISABLE=1 (docs/gpu-results.md, from benchmarks/results/gpu-s1-host-ram-*.json).
A fresh CI container starts with an empty cache, so which case pays depends on
the order cases run in. session/children.py measures again a child during which
the cache grew.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def folder(environ: Mapping[str, str] = os.environ) -> Path:
    """Where the driver keeps compiled kernels: $CUDA_CACHE_PATH, else ~/.nv/ComputeCache."""
    return Path(environ.get("CUDA_CACHE_PATH") or Path(environ.get("HOME", "~")).expanduser() / ".nv" / "ComputeCache")


def size(path: Path) -> int:
    """The cache's bytes in files (0 where it does not exist yet); a file removed while walking counts 0."""
    total = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total
