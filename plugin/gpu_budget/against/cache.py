"""The head's pytest cache copied into REF's worktree, so both sides' sessions read the same one.

`--lf`, `--ff`, `--nf` and `--sw` select or order tests from pytest's cache (`.pytest_cache` under the rootdir, or the
ini file's `cache_dir`). The worktree holds none (git does not track it): the base would run every test where the
head runs those that failed last, and a case the head deselected would read as removed. A cache inside the
repository is copied to the same place in the worktree, where the base writes its own; one outside it is read by both
as it is.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


def cache_dir(config: pytest.Config) -> Path | None:
    """The folder pytest's cache provider uses for this session (the ini file's `cache_dir`, from the rootdir); None
    under `-p no:cacheprovider`, which registers no `cache_dir` (the base then reads no cache, as the head)."""
    if not config.pluginmanager.has_plugin("cacheprovider"):
        return None
    given = Path(os.path.expandvars(os.path.expanduser(str(config.getini("cache_dir")))))
    return given if given.is_absolute() else Path(str(config.rootpath)) / given


def copy_into(cache: Path | None, top: Path, tree: Path) -> None:
    """The cache at the same place in the worktree, where it is inside the repository and the worktree holds none."""
    if cache is None or not cache.is_dir() or not cache.resolve().is_relative_to(top):
        return
    target = tree / cache.resolve().relative_to(top)
    if not target.exists():
        shutil.copytree(cache, target, symlinks=True, ignore_dangling_symlinks=True)
