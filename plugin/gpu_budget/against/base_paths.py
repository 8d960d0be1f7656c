"""What the base side of `--gpu-budget-against=REF` runs: the folder its session starts in and the paths it is given.

The head side runs the user's command line as it is. The base side runs it in
REF's worktree, where a path given (or the folder the run starts in) may not
exist: a test file or folder added since REF is left out (its cases are new
at head); one git sees renamed since REF is given under its old path, so its
cases pair with the head's (renames.py). A folder is found at REF as the folder
its files were renamed from (`git mv memtests gputests`), or, where they came
from several (a folder made of the files of two old ones), as those files
themselves. The run may start inside such a folder: the base session then
starts in the folder it was renamed from, or in the nearest folder above it
that REF holds, given the old files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpu_budget.against.renames import folder_was, renamed_files
from gpu_budget.against.worktree import Ref, Repo, missing_at


@dataclass(frozen=True)
class BasePaths:
    """The base side's paths: `instead` each path argument REF does not hold as it is (or every path argument, where
    the base starts elsewhere) -> what the base runs instead (empty: left out, its cases new); `start` the folder
    the base session starts in, relative to the top folder; `added` paths the base is given where the command line
    names none (the run started in a folder REF lacks, whose files came from several); `nothing` whether the base
    holds none of the selection (no base session); `said` the header's line of where the base starts, if elsewhere."""

    instead: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    start: str = "."
    added: tuple[str, ...] = ()
    nothing: bool = False
    said: str | None = None

    def base_args(self, user: Sequence[str]) -> list[str]:
        """The user's arguments as the base side runs them."""
        return [out for arg in user for out in self.instead.get(arg, (arg,))] + list(self.added)

    def gone(self) -> list[str]:
        """The path arguments the base side runs without."""
        return [arg for arg, instead in self.instead.items() if not instead]


def base_paths(repo: Repo, ref: Ref, here: Path, named: Sequence[tuple[str, Path]]) -> BasePaths:
    """The base side's start folder and paths for a run started in `here` naming `named` (argument, the file or
    folder it names), each inside the repository and in the working tree."""
    here_rel = here.relative_to(repo.top).as_posix()
    absent = [(arg, path) for arg, path in named if missing_at(repo, ref, [path])]
    here_missing = bool(missing_at(repo, ref, [here]))
    if not absent and not here_missing:
        return BasePaths(start=here_rel)
    renames = renamed_files(repo.top, ref.commit)
    start, said = here_rel, None
    if here_missing:
        start = folder_was(renames, here_rel) or ""
        said = _said(ref, here_rel, start, "the folder git sees it renamed from")
        if not start:
            start = _held_above(repo, ref, here)
            said = _said(ref, here_rel, start, "the nearest folder above it that it holds")
            if not named:
                added = tuple(os.path.relpath(repo.top / old, repo.top / start)
                              for old in _old_files(renames, here_rel))
                if not added:
                    return BasePaths(nothing=True)
                return BasePaths(start=start, added=added, said=f"{said}, given the files git sees renamed into "
                                                                f"{here_rel}: {', '.join(added)}")
    instead: dict[str, tuple[str, ...]] = {}
    for arg, path in named:
        if (arg, path) not in absent and start == here_rel:
            continue
        rel = path.relative_to(repo.top).as_posix()
        olds = [rel] if (arg, path) not in absent else _old_paths(renames, rel, path.is_dir())
        _, sep, rest = arg.partition("::")
        instead[arg] = tuple(f"{os.path.relpath(repo.top / old, repo.top / start)}{sep}{rest}" for old in olds)
    nothing = bool(named) and not any(instead.get(arg, (arg,)) for arg, _ in named)
    return BasePaths(instead, start, (), nothing, None if nothing else said)


def _old_paths(renames: Mapping[str, str], rel: str, is_dir: bool) -> list[str]:
    """Where `rel` (relative to the top folder) was at base: a file's old path, a folder's old folder, or the files
    renamed into a folder from several; empty where git sees none of it renamed."""
    was = {new: old for old, new in renames.items()}
    if not is_dir:
        return [was[rel]] if rel in was else []
    old = folder_was(renames, rel)
    return [old] if old else _old_files(renames, rel)


def _old_files(renames: Mapping[str, str], folder: str) -> list[str]:
    """The old paths of the files git sees renamed into `folder` (relative to the top folder), in order."""
    inside = "" if folder in ("", ".") else folder + "/"
    return sorted(old for old, new in renames.items() if new.startswith(inside))


def _held_above(repo: Repo, ref: Ref, here: Path) -> str:
    """The nearest folder above `here` that REF holds, relative to the top folder ("." for the top itself)."""
    for folder in here.parents:
        if folder == repo.top or not folder.is_relative_to(repo.top):
            return "."
        if not missing_at(repo, ref, [folder]):
            return folder.relative_to(repo.top).as_posix()
    return "."


def _said(ref: Ref, here_rel: str, start: str, which: str) -> str:
    where = "the repository's top folder" if start == "." else f"{start}, {which}"
    return f"{here_rel} not at {ref.given} ({ref.short}): the base session starts in {where}"
