"""The test files git sees renamed between base and the working tree, as node-id paths: one case, not new + removed.

`git diff --name-status -M <base>` compares REF's commit with the working tree
as it is (committed, staged and unstaged changes alike) and pairs a deleted
file with an added one of similar content (git's rename detection, 50 % alike
by default). A file not yet added to git is seen too: the diff runs on a
temporary copy of the index in which the untracked `*.py` files are marked
intent-to-add; the user's index and objects are never written. Only renames of files
under the pytest rootdir count, as paths relative to it (a node id's module part).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path


def _git(args: list[str], top: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=top, env=dict(env), capture_output=True, text=True, check=False)


def renamed_files(top: Path, commit: str) -> dict[str, str]:
    """Old path -> new path, relative to the repository's top folder, for each file renamed since `commit`."""
    with tempfile.TemporaryDirectory(prefix="gpu-budget-index-") as tmp:
        own, objects = _git(["rev-parse", "--git-path", "index", "--git-path", "objects"], top,
                            os.environ).stdout.split("\n")[:2]
        # the index and any object git writes (intent-to-add writes the empty blob) are temporary; the repository's
        # objects are read through the alternate
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index"), "GIT_OBJECT_DIRECTORY": str(Path(tmp) / "objects"),
               "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(top / objects)}
        (Path(tmp) / "objects").mkdir()
        if own and (top / own).is_file():  # relative to `top`, or absolute
            shutil.copyfile(top / own, env["GIT_INDEX_FILE"])
        untracked = _git(["ls-files", "-z", "--others", "--exclude-standard", "--", "*.py"], top, env).stdout
        names = [name for name in untracked.split("\0") if name]
        if names:
            _git(["add", "--intent-to-add", "--", *names], top, env)
        diff = _git(["diff", "--name-status", "-M", "-z", commit, "--"], top, env)
    if diff.returncode != 0:
        return {}
    return parse(diff.stdout)


def parse(out: str) -> dict[str, str]:
    """Old path -> new path from `git diff --name-status -z` output (a rename: R<score>, old, new; others: one path)."""
    tokens = out.split("\0")
    found: dict[str, str] = {}
    k = 0
    while k < len(tokens) and tokens[k]:
        status = tokens[k]
        if status[0] in "RC":
            if status[0] == "R" and k + 2 < len(tokens):
                found[tokens[k + 1]] = tokens[k + 2]
            k += 3
        else:
            k += 2
    return found


def folder_was(renames: Mapping[str, str], folder: str) -> str | None:
    """The folder at base that `folder` (relative to the top folder) was renamed from, where git sees the files under
    it renamed from one folder (`git mv memtests gputests`: each file keeps its place below); else None. `renames`:
    old path -> new, as renamed_files gives them."""
    return _one_folder({new: old for old, new in renames.items()}, folder)


def folder_now(renames: Mapping[str, str], folder: str) -> str | None:
    """The folder `folder` (relative to the top folder, at base) was renamed to, where git sees the files under it
    renamed into one folder, each keeping its place below (folder_was, the other way); else None."""
    return _one_folder(renames, folder)


def _one_folder(moves: Mapping[str, str], folder: str) -> str | None:
    """The one folder the files under `folder` moved into, each keeping its place below it (`moves`: path -> path it
    moved to); None where they went to several or none."""
    into = set()
    for source, target in moves.items():
        rest = source.removeprefix(folder + "/")
        if rest != source and target.endswith("/" + rest) and len(target) > len(rest) + 1:
            into.add(target[:-len(rest) - 1])
    return into.pop() if len(into) == 1 else None


def renamed_modules(top: Path, commit: str, rootdir: Path) -> dict[str, str]:
    """Old module path -> new, relative to `rootdir` as node ids write them, for the renames under it."""
    try:
        under = rootdir.resolve().relative_to(top.resolve()).as_posix()
    except ValueError:  # a rootdir outside the repository: no node id names a file git tracks
        return {}
    prefix = "" if under in ("", ".") else under + "/"
    return {old[len(prefix):]: new[len(prefix):] for old, new in renamed_files(top, commit).items()
            if old.startswith(prefix) and new.startswith(prefix)}
