"""A --rootdir that moves the baselines folder off the committed one is said once, not left to a column of no-baseline rows.

The baselines folder is anchored at pytest's rootdir (docs/baselines.md, "Where the store is"), as pytest anchors its
own cache_dir, so `--rootdir=memtests` with the ini file and its committed baselines/ one folder up reads and writes
memtests/baselines: every case was recorded anew there (or failed under CI for want of a baseline), none compared with
the committed entries, and only the row's file path told why.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest


def _shown(path: Path, here: Path) -> str:
    return str(path.relative_to(here)) if path.is_relative_to(here) else str(path)


def _files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json")) if folder.is_dir() else []


def moved_line(config: pytest.Config, folder: Path, written: Iterable[str], here: Path) -> str | None:
    """A warning where --rootdir was given and the baselines folder held no file before this session (each one under it
    now was written by it), naming it and the ini file's own where that differs; else None."""
    given = getattr(config.option, "rootdir", None)
    root = Path(str(config.rootpath))
    if not given or not folder.is_absolute() or not folder.is_relative_to(root):
        return None  # no --rootdir, or a folder given outside it: not one the rootdir moved
    ours = {Path(path).resolve() for path in written}
    if any(path.resolve() not in ours for path in _files(folder)):
        return None
    ini = None if config.inipath is None else Path(config.inipath)
    other = None if ini is None else ini.parent / folder.relative_to(root)
    if other == folder:
        return None  # the ini file's own folder: a first run, the tally says what it recorded
    held = [] if other is None else _files(other)
    beside = (f" (the ini file {_shown(ini, here)}'s folder holds {_shown(other, here)} with {len(held)} "
              f"file{'' if len(held) == 1 else 's'})" if ini is not None and other is not None and held else "")
    return (f"gpu-budget warning: --rootdir={given} puts the baselines folder at {_shown(folder, here)}, which held no "
            f"baseline file before this run, so no case was compared with one{beside}; drop --rootdir, or give "
            "--gpu-budget-baselines, to judge against the committed baselines")
