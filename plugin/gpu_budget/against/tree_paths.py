"""Paths into the user's repository, pointed into REF's worktree for a base-side session.

An absolute path the user wrote (an argument, `$PWD/tests`) names the head's
files wherever the session starts: left as it is, the base session collects
the head's code and measures the head against itself, a regression passing.
Such a path is read through symbolic links (a checkout reached through a link:
`$PWD` spells the link) and pointed at the same place in the worktree. A link inside the
repository is kept: the worktree holds its own. A relative path already
resolves in the worktree, where the session starts.
"""

from __future__ import annotations

import os
from pathlib import Path


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
