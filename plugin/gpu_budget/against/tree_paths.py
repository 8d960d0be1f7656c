"""Paths into the user's repository, pointed into REF's worktree for a base-side session, or a bisect's.

An absolute path the user wrote (an argument, `$PWD/tests`; an entry of
PYTHONPATH, `$PWD/src`) names the head's files wherever the session starts:
left as it is, the base session imports or collects the head's code and
measures the head against itself, a regression passing. Such a path is read
through symbolic links (a checkout reached through a link: `$PWD` spells the
link) and pointed at the same place in the worktree. A link inside the
repository is kept: the worktree holds its own. A relative path already
resolves in the worktree, where the session starts.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from gpu_budget.against.worktree import LOCATING

PLUGIN_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds gpu_budget: the plugin, the same both sides


def args_into(args: Sequence[str], top: Path, tree: Path) -> list[str]:
    """Command-line arguments with each absolute path inside `top` (a path, a node id, `--opt=PATH`) pointed into
    `tree` (into_tree)."""
    out = []
    for arg in args:
        head, sep, value = arg.partition("=") if arg.startswith("-") else ("", "", arg)
        out.append(f"{head}{sep}{into_tree(value, top, tree)}")
    return out


def into_tree(value: str, top: Path, tree: Path) -> str:
    """`value` pointed into `tree` where it is an absolute path inside `top` (resolved: as spelt, or through a folder
    above it that is `top` by a link), a node id's test part (a parametrize id may hold "/") kept; else as it is."""
    given, sep, node = value.partition("::")
    if not os.path.isabs(given):
        return value
    path = os.path.normpath(given)
    for above in [path, *(str(p) for p in Path(path).parents)]:
        if above == str(top) or os.path.realpath(above) == str(top):
            rest = os.path.relpath(path, above)
            return (str(tree) if rest == "." else os.path.join(tree, rest)) + sep + node
    return value


def pythonpath_into(top: Path, tree: Path) -> str | None:
    """This process's PYTHONPATH with each absolute entry inside `top` pointed into `tree` where the worktree holds it,
    but the one the plugin is imported from, made absolute: both sides run the same plugin (docs/against.md). A folder git does not
    track (a build's output, a virtual environment in the checkout) is not in the worktree: kept as it is, or the
    base would import nothing from it. None where PYTHONPATH is not set."""
    value = os.environ.get("PYTHONPATH")
    if value is None:
        return None
    return os.pathsep.join(_entry(entry, top, tree) for entry in value.split(os.pathsep))


def _entry(entry: str, top: Path, tree: Path) -> str:
    if not entry:
        return entry
    if _plugin(entry):  # a relative one too (PYTHONPATH=plugin): it would resolve in the worktree, to REF's plugin
        return str(PLUGIN_ROOT)
    moved = into_tree(entry, top, tree)
    return moved if os.path.exists(moved) else entry


def _plugin(entry: str) -> bool:
    """Whether the entry (a relative one from this process's folder, where the user wrote it) holds this plugin."""
    return Path(os.path.realpath(entry)) == PLUGIN_ROOT


def session_env(top: Path, tree: Path) -> dict[str, str | None]:
    """What a session in the worktree sets in its environment (None: removes): PYTHONPATH pointed into it, and none
    of the variables a git hook exports to name the user's repository (worktree.LOCATING)."""
    pythonpath = pythonpath_into(top, tree)
    return {**dict.fromkeys(LOCATING), **({} if pythonpath is None else {"PYTHONPATH": pythonpath})}
