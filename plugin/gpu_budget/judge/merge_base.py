"""The merge base of a baseline file git left conflicted, from git's index.

git's default conflict style writes no base section, so the conflict
regions alone cannot tell an entry one side deleted from one the other side
added. While the merge is unresolved, git's index holds the base as stage 1
of the path (`git show :1:./FILE`): the same text diff3's base sections
rebuild.
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def from_index(path: Path) -> str | None:
    """The base text of `path` in its repository's unresolved merge; None where there is none to read (not in a
    git work tree, the merge already resolved, no common version: both sides added the file, git not installed)."""
    try:
        done = subprocess.run(["git", "show", f":1:./{path.name}"], cwd=path.parent, capture_output=True, text=True,
                              timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None
