"""REF's submodules in its worktree: `git worktree add` leaves each one an empty folder.

A case whose code lives in a submodule (a vendored library, `run="vendor.runners:run"`) could not be measured at
the base: each of its cases was an "error at base", judged on its budget alone at head, so a submodule bump that
grew a peak passed. Each submodule REF records is checked out at the commit REF records, in a clone that shares the
objects of the working tree's own copy of it (`git clone --shared`: nothing fetched, nothing written into the user's
repositories; removed with the worktree's folder), nested submodules likewise. One the working tree has not checked
out, or whose copy lacks that commit, stays empty, and is said. A bisect checks them out again at each commit it
tries (its `git checkout` leaves a submodule's folder as it is).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from gpu_budget.against.worktree import git, tree_git


def check_out(top: Path, commit: str, tree: Path, under: str = "") -> list[str]:
    """Each submodule `commit` records (a gitlink in its tree) checked out in `tree` from the one in `top`, nested
    ones too; what could not be, one line each, naming the submodule's path (below `under`, a nested one's parent)."""
    listed = git(["ls-tree", "-r", "-z", "--full-tree", commit], top).stdout
    problems: list[str] = []
    for entry in filter(None, listed.split("\0")):
        info, _, path = entry.partition("\t")
        mode, _, sha = info.split(" ", 2)
        if mode != "160000":
            continue
        source, target, named = top / path, tree / path, f"submodule {under}{path}"
        if not (source / ".git").exists():
            problems.append(f"{named}: not checked out in the working tree (git submodule update --init)")
            continue
        if (target / ".git").is_dir():  # a bisect's clone of the commit tried before: this commit's replaces it
            shutil.rmtree(target)
        cloned = tree_git(["clone", "-q", "--shared", "--no-checkout", str(source), str(target)], tree)
        checked = cloned if cloned.returncode else tree_git(["checkout", "-q", "--detach", sha], target)
        if checked.returncode:
            said = (checked.stderr.strip().splitlines() or ["?"])[-1]
            problems.append(f"{named}: {sha[:10]} could not be checked out from the working tree's copy (fetch it "
                            f"there): {said}")
            continue
        problems += check_out(source, sha, target, f"{under}{path}/")
    return problems
