"""A case's key in its baseline file: the test file's path from its project root, the test's name, its label.

Baseline files are named by the test module's stem (files.path_for), so two
test files of one name in a project (tests/a/test_same.py, tests/b/test_same.py)
share a file; the key's path keeps their entries apart. Entries recorded before
the key held the path are keyed by the name alone ("legacy" keys): such an entry
is still read, as before, where no other module of that stem could own it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gpu_budget.judge import files

SEPARATOR = "::"


def module_path(module: str | Path) -> str:
    """The test file's path from the folder its baselines are anchored at (its project root, else the working
    folder), in POSIX form: the same from every checkout and invocation folder of the project."""
    path, anchor = Path(module).resolve(), files.anchor_of(str(module))
    return path.relative_to(anchor).as_posix() if path.is_relative_to(anchor) else path.name


def case_key(module: str | Path, name: str, label: str | None = None) -> str:
    """'<file from the project root>::<test name>[::label]', e.g. 'memtests/test_s1_wav2vec2.py::test_fix[lora]::lora'."""
    return module_path(module) + SEPARATOR + legacy_key(name, label)


def legacy_key(name: str, label: str | None = None) -> str:
    """The key entries were recorded under before it held the file's path: the test's name, '::label' added."""
    return name + (f"{SEPARATOR}{label}" if label else "")


def is_legacy(key: str) -> bool:
    """A key without the file's path (its first part names no .py file; a parameter's text is not a path)."""
    first = key.split(SEPARATOR, 1)[0]
    return "[" in first or not first.endswith(".py")


def test_name(key: str) -> str:
    """The test function's name in a key of either form (parameters and label left off)."""
    rest = key.split(SEPARATOR, 1)[1] if not is_legacy(key) else key
    return rest.split(SEPARATOR)[0].split("[")[0]


def find(entries: Mapping[str, Any], module: str | Path, name: str, label: str | None,
         namesakes: Iterable[str | Path] = ()) -> tuple[str | None, Any]:
    """The key under which `entries` (one scale's) holds this case, and its entry; (None, None) where it holds none.

    The legacy key is read only where no other module could own it: no other
    test file of this stem was collected in the session (`namesakes`), and the
    file holds no keyed entry of this name from another file.
    """
    key = case_key(module, name, label)
    if key in entries:
        return key, entries[key]
    old = legacy_key(name, label)
    if old not in entries or any(True for _ in namesakes):
        return None, None
    tail = SEPARATOR + old
    if any(k.endswith(tail) and not is_legacy(k) and k != key for k in entries):
        return None, None
    return old, entries[old]


def kept_on_prune(keys: Iterable[str], collected: Mapping[str, Iterable[str]]) -> set[str]:
    """The keys of one file (and scale) that name a test still collected; `collected`: module path -> test names.

    A legacy key is kept while a module of the file still has its test and the
    case has no keyed entry yet; once one is recorded, the legacy one is dropped.
    """
    keys = set(keys)
    names = {module_path(m): set(n) for m, n in collected.items()}
    kept = {k for k in keys if not is_legacy(k) and test_name(k) in names.get(k.split(SEPARATOR, 1)[0], set())}
    keyed = {k.split(SEPARATOR, 1)[1] for k in kept}
    every = set().union(*names.values()) if names else set()
    return kept | {k for k in keys if is_legacy(k) and test_name(k) in every and k not in keyed}
