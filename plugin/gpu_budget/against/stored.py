"""The stored baseline of each case, where one exists, to show beside the pair: never used for the verdict.

Found as a plain gated session finds it: the baselines folder option (anchored
as baselines.folder_for anchors it), the head runs' hardware key, the test
module's file at head, the case's key in it (keys.py: the file's path from its
project root, the test's name, `::label` added) and the scale. A file that cannot be read shows nothing (the pair needs none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from gpu_budget.judge import files, keys
from gpu_budget.model.entry import Entry
from gpu_budget.model.result import Result


def name_of(row: Result) -> str:
    """The test's name, parameters included: its node id's last part."""
    return row.test_nodeid.split("::")[-1]


def stored_for(rows: Sequence[Result], rootdir: Path, folder: Path, hw_key: str | None) -> dict[str, Entry]:
    """nodeid -> the stored entry, for the cases of `rows` (head's) that have one on this hardware."""
    if not hw_key:
        return {}
    out: dict[str, Entry] = {}
    loaded: dict[Path, Mapping | None] = {}
    for row in rows:
        module = rootdir / row.nodeid.split("::")[0]
        path = files.path_for(folder, hw_key, str(module))
        if path not in loaded:
            try:
                loaded[path] = files.load(path)
            except (files.BaselineError, OSError):
                loaded[path] = None
        data = loaded[path]
        found = None if data is None else keys.find(data["entries"].get(row.scale, {}), module, name_of(row),
                                                     row.label)[1]
        if found is not None:
            out[row.nodeid] = Entry.from_json(found)
    return out
