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
that REF holds, given the old files. A folder REF holds is given, besides
itself, the old paths of the test files git sees moved into it from
elsewhere (`git mv other/test_b.py memtests/`): REF's memtests lacks them.
The ini file's testpaths, collected where the command line names no path, are
read as if named there: where REF does not hold them as they are, or files were
moved into them, the base is given what naming them would give it.
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
    the base session starts in, relative to the top folder; `selected` and `folded` node ids as node_ids.py gives
    them to the base; `added` paths the base is given where the command line
    names none (the run started in a folder REF lacks, whose files came from several); `nothing` whether the base
    holds none of the selection (no base session); `said` the header's line of where the base starts, if elsewhere."""

    instead: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    start: str = "."
    added: tuple[str, ...] = ()
    nothing: bool = False
    said: str | None = None
    selected: tuple[str, ...] = ()  # node ids given as their file (node_ids.py), as the base names them
    folded: frozenset[str] = frozenset()  # node ids whose file another argument gives the base: not gone

    def base_args(self, user: Sequence[str]) -> list[str]:
        """The user's arguments as the base side runs them."""
        return [out for arg in user for out in self.instead.get(arg, (arg,))] + list(self.added)

    def gone(self) -> list[str]:
        """The path arguments the base side runs without."""
        return [arg for arg, instead in self.instead.items() if not instead and arg not in self.folded]


def base_paths(repo: Repo, ref: Ref, here: Path, named: Sequence[tuple[str, Path]],
               collects_here: bool = False, testpaths: Sequence[tuple[str, Path]] = ()) -> BasePaths:
    """The base side's start folder and paths for a run started in `here` naming `named` (argument, the file or
    folder it names), each inside the repository and in the working tree; `collects_here`: no path is named and
    pytest collects `here`; `testpaths`: no path is named and pytest collects the ini file's testpaths, these."""
    if testpaths and not named:
        return _as_named(repo, ref, here, testpaths)
    here_rel = here.relative_to(repo.top).as_posix()
    absent = [(arg, path) for arg, path in named if missing_at(repo, ref, [path])]
    here_missing = bool(missing_at(repo, ref, [here]))
    if not absent and not here_missing:
        gathered = bool(named) or collects_here  # a folder pytest collects may hold files moved in since REF
        return _moved_in(repo, renamed_files(repo.top, ref.commit), here_rel, named, collects_here) if gathered \
            else BasePaths(start=here_rel)
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


def _as_named(repo: Repo, ref: Ref, here: Path, testpaths: Sequence[tuple[str, Path]]) -> BasePaths:
    """The ini file's testpaths read as if named on the command line (a renamed one under its old path, one REF lacks
    left out, a folder given the test files moved into it), and given to the base as paths where that changes them;
    else (or where REF holds none of them) the base collects its own ini file's testpaths, as a plain run there would."""
    given = [arg for arg, _ in testpaths]
    named = base_paths(repo, ref, here, testpaths)
    paths = named.base_args(given)
    if named.nothing or paths == given:
        return BasePaths(start=named.start)
    said = f"the ini file's testpaths ({' '.join(given)}) read as if named on the command line: " + \
        (named.said or f"the base session is given {' '.join(paths)}")
    return BasePaths(start=named.start, added=tuple(paths), said=said)


def _moved_in(repo: Repo, renames: Mapping[str, str], here_rel: str, named: Sequence[tuple[str, Path]],
              collects_here: bool) -> BasePaths:
    """Where REF holds every path given and the folder the run starts in: each folder given (or `here`, which pytest
    collects where no path is given) is also given, at base, the old paths of the test files git sees moved into it
    from a folder no path given holds (`git mv other/test_b.py memtests/`), so their cases pair with the head's."""
    folders = [(arg, path.relative_to(repo.top).as_posix()) for arg, path in named if path.is_dir()]
    if not named and collects_here:
        folders = [(None, here_rel)]
    held = [path.relative_to(repo.top).as_posix() for _, path in named] or [here_rel]
    instead: dict[str, tuple[str, ...]] = {}
    added: tuple[str, ...] = ()
    moved: list[str] = []
    for arg, rel in folders:
        olds = [old for old in _old_files(renames, rel) if _test_file(old) and not any(_under(old, h) for h in held)]
        if not olds:
            continue
        moved.append(f"{rel or '.'}: the base session is also given the test files git sees moved into it: "
                     f"{', '.join(olds)}")
        extra = tuple(os.path.relpath(repo.top / old, repo.top / here_rel) for old in olds)
        if arg is None:
            added = (".", *extra)
        else:
            instead[arg] = (arg, *extra)
    return BasePaths(instead, here_rel, added, said="; ".join(moved) or None)


def _test_file(rel: str) -> bool:
    """Whether a moved file is one to give pytest as a path: a Python module, not a conftest or a package's
    __init__ (which pytest reads as they are found, not as test modules)."""
    name = rel.rsplit("/", 1)[-1]
    return name.endswith(".py") and name not in ("conftest.py", "__init__.py")


def _under(rel: str, folder: str) -> bool:
    """Whether `rel` is `folder` or inside it (relative to the top folder; "." or "" the top itself)."""
    return folder in ("", ".") or rel == folder or rel.startswith(folder + "/")


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
