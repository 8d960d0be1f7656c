"""Files the gate keeps per case (plots, CUDA memory snapshots): their names, and the snapshot's hand-over.

A snapshot comes from a second run of a failing CUDA case with the allocation
recorder on (the judged run never records: the recorder's buffer and time would
land in its figures); the child dumps it into a temporary file (a held one:
isolate/unix_paths.snapshot_file), kept under a name derived from the node id.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Measurement


def slug(nodeid: str) -> str:
    """A file name for a node id: 'memtests/test_s1.py::test_x[a]::lbl' -> 'test_s1__test_x-a__lbl'."""
    module, _, rest = nodeid.partition("::")
    name = Path(module).stem + (f"::{rest}" if rest else "")
    name = re.sub(r"[^A-Za-z0-9_.:-]+", "-", name).replace("::", "__")
    name = re.sub(r"-*__-*", "__", re.sub(r"-+", "-", name))
    return name.strip("-.")[:150]


def file_names(nodeids: Iterable[str]) -> dict[str, str]:
    """Each node id's file name: its slug, and where several node ids share a slug ('t[a b]' and 't[a-b]', one
    module name in two folders, ids alike in their first 150 characters) a short hash of the id after it in each,
    so that no case's file is written over by another's."""
    shared: dict[str, list[str]] = {}
    for nodeid in dict.fromkeys(nodeids):
        shared.setdefault(slug(nodeid), []).append(nodeid)
    return {nodeid: file_name(nodeid, len(ids) > 1) for ids in shared.values() for nodeid in ids}


def file_name(nodeid: str, shared: bool) -> str:
    """A node id's file name: its slug, a short hash of the id after it where another case's slug is the same."""
    return f"{slug(nodeid)}-{hashlib.sha1(nodeid.encode()).hexdigest()[:8]}" if shared else slug(nodeid)


def shared_slugs(nodeids: Iterable[str]) -> frozenset[str]:
    """The slugs two or more of `nodeids` (the session's tests) have: one module name in two folders, ids alike in
    their first 150 characters. A case of such a test names its files with file_name's hash, as file_names does."""
    counts = Counter(slug(nodeid) for nodeid in dict.fromkeys(nodeids))
    return frozenset(name for name, count in counts.items() if count > 1)


def wants_snapshot(measurement: Measurement, mark, baseline_peaks: Peaks | None) -> bool:
    """Whether a failed CUDA case is worth a second run with the allocation recorder on.

    Yes when its child failed with an exception (an out-of-memory error among
    them: the snapshot shows what held the memory; for a command, one that
    ended it with a non-zero exit or failed a rank), or when its allocated peak
    passed the limit judge() applies to it: the VRAM budget or the baseline's
    regression limit, whichever is lower. Not for a host-RAM failure (the
    recorder sees only CUDA allocations), a timeout or a kill (nothing to dump).
    """
    if not measurement.cuda:
        return False
    if not measurement.ok:
        return measurement.error_kind in ("oom", "exception", "exit", "rank")
    limits = [mark.budget.vram] if mark.budget.vram is not None else []
    then = baseline_peaks.vram_allocated if baseline_peaks is not None else None
    if then is not None:
        limits.append(int(mark.tolerance.limit(then)))
    peak = measurement.peaks.vram_allocated
    return bool(limits) and peak is not None and peak > min(limits)


def keep_snapshot(tmp: str, folder: Path, nodeid: str, shared: bool = False) -> str:
    """Move a failing case's snapshot next to the report; OSError where it cannot be kept (a file where the folder
    should be, a full disk). `shared`: another test of the session has its test's slug (shared_slugs), so the name
    takes a hash and neither case's snapshot replaces the other's."""
    target = folder / f"{file_name(nodeid, shared)}.pickle"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(tmp, target)
    return str(target)
