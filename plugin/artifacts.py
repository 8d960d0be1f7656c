"""Files the gate keeps per case (plots, CUDA memory snapshots): their names, and the snapshot's hand-over.

A snapshot is recorded by the child into a temporary file and kept only when
its case fails, under a name derived from the node id.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path


def slug(nodeid: str) -> str:
    """A file name for a node id: 'memtests/test_s1.py::test_x[a]::lbl' -> 'test_s1__test_x-a__lbl'."""
    module, _, rest = nodeid.partition("::")
    name = Path(module).stem + (f"::{rest}" if rest else "")
    name = re.sub(r"[^A-Za-z0-9_.:-]+", "-", name).replace("::", "__")
    name = re.sub(r"-*__-*", "__", re.sub(r"-+", "-", name))
    return name.strip("-.")[:150]


def snapshot_request(device: dict | None, mark, baseline: dict | None) -> dict | None:
    """On CUDA: record the allocator's history in the child, and dump it past the VRAM limit or on a crash.

    The limit is the one judge() applies to the allocated peak: the VRAM
    budget, or the baseline's regression limit, whichever is lower.
    """
    if not (device or {}).get("cuda"):
        return None
    limits = [mark.budget.vram] if mark.budget.vram is not None else []
    then = ((baseline or {}).get("peaks") or {}).get("vram_allocated")
    if then is not None:
        limits.append(int(mark.tolerance.limit(then)))
    fd, tmp = tempfile.mkstemp(prefix="gpu-budget-snapshot-", suffix=".pickle")
    os.close(fd)
    return {"path": tmp, "vram_limit": min(limits) if limits else None}


def keep_snapshot(tmp: str, folder: Path, nodeid: str) -> str | None:
    """Move a failing case's snapshot next to the report; None when it cannot be kept."""
    target = folder / f"{slug(nodeid)}.pickle"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(tmp, target)
    except OSError:
        return None
    return str(target)
