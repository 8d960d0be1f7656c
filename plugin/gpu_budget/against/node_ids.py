"""Node ids on the command line (`test_mem.py::test_new`) at the base side of `--gpu-budget-against=REF`.

A test added since REF, named by its node id, is not at base, and pytest fails a session given a node id it cannot
find (exit code 4): the whole comparison would fail on a case that is merely new. So the base is given each node id's
file instead (once per file), and narrow.py keeps, of that file, the tests the node ids name; a test the base lacks
is then absent there, and new at head. A node id whose file another path argument gives whole (the file, or a folder
holding it) is given nothing more: that argument collects it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from gpu_budget.against.base_paths import BasePaths


def as_files(base: BasePaths, named: Sequence[tuple[str, Path]]) -> BasePaths:
    """`base` with each node id argument of `named` (argument, its file in the working tree) given as its file, the
    node ids it stands for in `selected` (as the base names them: a renamed file's old path)."""
    whole = [path for arg, path in named if "::" not in arg]
    instead, selected, folded, given = dict(base.instead), list(base.selected), set(base.folded), set()
    for arg, path in named:
        outs = instead.get(arg, (arg,))
        if "::" not in arg or not outs:  # a plain path, or a file REF lacks: left out as base_paths says
            continue
        folded.add(arg)
        if any(path == other or path.is_relative_to(other) for other in whole):
            instead[arg] = ()
            continue
        files = [out.partition("::")[0] for out in outs]
        instead[arg] = tuple(f for f in dict.fromkeys(files) if f not in given)
        given.update(files)
        selected.extend(outs)
    if not folded:
        return base
    return replace(base, instead=instead, selected=tuple(selected), folded=frozenset(folded))


def lines(selected: Sequence[str], folder: Path, into_tree) -> str:
    """narrow.SELECT_ENV's file: each node id as `<its file's absolute path at base>::<the rest>`; `folder` the
    base session's, `into_tree` the arguments pointed into the worktree (an absolute path of the repository's)."""
    out = []
    for nodeid in selected:
        file, _, rest = nodeid.partition("::")
        out.append(f"{(folder / into_tree([file])[0]).resolve()}::{rest}\n")
    return "".join(out)
