"""The stored baseline of each case, where one exists, to show beside the pair: never used for the verdict.

Found as a plain gated session finds it, by the baseline store (judge/store.py)
of the baselines folder option and the head runs' hardware key: the test
module's file at head, the case's key in it (model/case_id.py: the file's path
from its project root, the test's name, `::label` added) and the scale. A file
that cannot be read shows nothing (the pair needs none). A test file outside
pytest's rootdir has a node id that is no path from it (`pytest -c
configs/ci.ini tests`: 'test_l.py::test_l'): its file is found under the paths
the command line named, as pytest collected it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gpu_budget.judge import keys
from gpu_budget.judge.store import BaselineStore
from gpu_budget.model.case_id import SEPARATOR
from gpu_budget.model.entry import Entry
from gpu_budget.model.result import Result


def stored_for(rows: Sequence[Result], rootdir: Path, folder: Path, hw_key: str | None,
               named: Sequence[Path] = ()) -> dict[str, Entry]:
    """nodeid -> the stored entry, for the cases of `rows` (head's) that have one on this hardware; `named`: the
    files and folders the command line named."""
    if not hw_key:
        return {}
    store = BaselineStore(folder, hw_key)
    out: dict[str, Entry] = {}
    for row in rows:
        try:
            module = module_of(row.nodeid.split(SEPARATOR)[0], rootdir, named)
            found = store.lookup(keys.row_case(row.nodeid, row.label, rootdir, folder, module), row.scale)
        except OSError:
            continue
        if found.entry is not None:
            out[row.nodeid] = found.entry
    return out


def module_of(test_file: str, rootdir: Path, named: Sequence[Path]) -> str | None:
    """The test file a node id's file part names where it is no path from the rootdir: the one file a named folder
    holds at that path, or a named file of that path; None where the rootdir holds it, or no or several named paths
    do (two namesakes outside the rootdir have one node id)."""
    if (rootdir / test_file).is_file():
        return None
    found = {(p / test_file).resolve() for p in named if (p / test_file).is_file()}
    found |= {p.resolve() for p in named if p.is_file() and p.as_posix().endswith("/" + test_file)}
    return str(found.pop()) if len(found) == 1 else None
