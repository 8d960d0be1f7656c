"""The stored baseline of each case, where one exists, to show beside the pair: never used for the verdict.

Found as a plain gated session finds it, by the baseline store (judge/store.py)
of the baselines folder option and the head runs' hardware key: the test
module's file at head, the case's key in it (model/case_id.py: the file's path
from its project root, the test's name, `::label` added) and the scale. A file
that cannot be read shows nothing (the pair needs none).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gpu_budget.judge import keys
from gpu_budget.judge.store import BaselineStore
from gpu_budget.model.entry import Entry
from gpu_budget.model.result import Result


def stored_for(rows: Sequence[Result], rootdir: Path, folder: Path, hw_key: str | None) -> dict[str, Entry]:
    """nodeid -> the stored entry, for the cases of `rows` (head's) that have one on this hardware."""
    if not hw_key:
        return {}
    store = BaselineStore(folder, hw_key)
    out: dict[str, Entry] = {}
    for row in rows:
        try:
            found = store.lookup(keys.row_case(row.nodeid, row.label, rootdir, folder), row.scale)
        except OSError:
            continue
        if found.entry is not None:
            out[row.nodeid] = found.entry
    return out
