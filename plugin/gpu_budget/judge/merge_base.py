"""The texts git merged into a baseline file it left conflicted, from git's index.

git's default conflict style writes no base section, so the conflict
regions alone cannot tell an entry one side deleted from one the other side
added. While the merge is unresolved, git's index holds the base as stage 1
of the path (`git show :1:./FILE`): the same text diff3's base sections
rebuild. It holds each side as committed too (stages 2 and 3): the lines
outside the conflict regions are git's line merge of both, which can join one
entry's key to another entry's figures, so a side rebuilt from the regions is
not always the side that was committed.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from gpu_budget.judge.conflict import SIZE


@dataclass(frozen=True)
class Staged:
    """A conflicted file's sides as git's index holds them: `base` None where there is none (both sides added it)."""

    ours: str
    theirs: str
    base: str | None


def from_index(path: Path) -> str | None:
    """The base text of `path` in its repository's unresolved merge; None where there is none to read (not in a
    git work tree, the merge already resolved, no common version: both sides added the file, git not installed)."""
    return _stage(path, 1)


def staged(path: Path) -> Staged | None:
    """Both sides of `path`'s unresolved merge (and its base) as committed; None where the index holds no two sides
    (not in a git work tree, the merge resolved or never begun, git not installed)."""
    ours, theirs = _stage(path, 2), _stage(path, 3)
    if ours is None or theirs is None:
        return None
    return Staged(ours, theirs, _stage(path, 1))


def unmerged_whole(path: Path) -> str | None:
    """What is wrong with `path` where git's merge left it unmerged as a whole, one side having deleted it while the
    other changed it (a modify/delete conflict: the working tree holds the changed side's file, no markers in it, so
    there is nothing to merge entry by entry), and what to do; None where its index holds no such conflict (not in a
    git work tree, merged, or a conflict with markers: resolve's own)."""
    try:
        done = subprocess.run(["git", "ls-files", "--unmerged", "--", path.name], cwd=path.parent, capture_output=True,
                              text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    stages = {line.split("\t")[0].split()[-1] for line in done.stdout.splitlines()} if done.returncode == 0 else set()
    if stages not in ({"1", "2"}, {"1", "3"}):
        return None
    deleted, changed = ("the merged branch", "HEAD") if stages == {"1", "2"} else ("HEAD", "the merged branch")
    return (f"{path}: git left it unmerged whole, no conflict markers in it: deleted on {deleted}'s side and changed "
            f"on {changed}'s. Keep it as the working tree holds it (the changed side's entries) with `git add {path}`, "
            f"or delete it with `git rm {path}` (where its test module is gone)")


def marker_size(path: Path) -> int:
    """The length of the conflict markers git writes into `path`: its `conflict-marker-size` attribute
    (.gitattributes), else git's SIZE (7). A file whose markers are longer read as "not valid JSON", and resolve found
    none; where git cannot tell (no work tree, git not installed), SIZE."""
    try:
        done = subprocess.run(["git", "check-attr", "conflict-marker-size", "--", path.name], cwd=path.parent,
                              capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return SIZE
    value = done.stdout.rpartition(": ")[2].strip() if done.returncode == 0 else ""
    return int(value) if value.isascii() and value.isdigit() and int(value) > 0 else SIZE


def _stage(path: Path, stage: int) -> str | None:
    """The text of one stage of `path` in git's index, read as UTF-8 (a baseline file's encoding, whatever the
    locale); None where it cannot be read."""
    try:
        done = subprocess.run(["git", "show", f":{stage}:./{path.name}"], cwd=path.parent, capture_output=True,
                              timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    try:
        return done.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return None
