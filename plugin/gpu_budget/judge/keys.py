"""Which entry of a baseline file is a case's: its key (model/case_id.py's rule), the legacy keys still read, and the
keys a prune keeps.

Baseline files are named by the test module's stem (store.py), so two test
files of one name in a project (tests/a/test_same.py, tests/b/test_same.py)
share a file; the key's path keeps their entries apart. Entries recorded before
the key held the path are keyed by the name alone ("legacy" keys): such an entry
is still read, as before, where no other module of that stem could own it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TypeVar

from gpu_budget.judge import files
from gpu_budget.model import case_id
from gpu_budget.model.case_id import SEPARATOR, CaseId

E = TypeVar("E")  # what a file's entries are read as: their JSON, or Entry


def module_path(module: str | Path, root: Path | None = None) -> str:
    """The test file's path from the folder its baselines are anchored at (files.anchor_of: its project root, else
    the working folder; `root` the baselines folder), in POSIX form: the same from every checkout and invocation
    folder of the project. A file outside that folder (in no project, run from another) is reached from it through
    '..' (`../ext/a/test_same.py`): its name alone would give two such files of one name one key."""
    path, anchor = Path(module).resolve(), files.anchor_of(str(module), root)
    return Path(os.path.relpath(path, anchor)).as_posix()


def case_of(nodeid: str, module: str | Path, name: str, label: str | None = None, root: Path | None = None) -> CaseId:
    """The case of a test (`module` its file as collected, `name` its name with parameters) and label; `root` the
    baselines folder (module_path)."""
    return CaseId(nodeid, label, module_path(module, root), name, str(module))


def row_case(nodeid: str, label: str | None, rootdir: Path, root: Path | None = None,
             module: str | None = None) -> CaseId:
    """The case of a report's row (`nodeid` the row's, '::label' added; its file relative to pytest's `rootdir`, or
    `module`, the file as collected, where known: a file outside the rootdir has a node id that is no path from it;
    `root` the baselines folder)."""
    test = case_id.strip_label(nodeid, label)
    return case_of(test, module or rootdir / test.split(SEPARATOR)[0], case_id.test_name(test), label, root)


def case_key(module: str | Path, name: str, label: str | None = None) -> str:
    """'<file from the project root>::<test name>[::label]', e.g. 'memtests/test_s1_wav2vec2.py::test_fix[lora]::lora'."""
    return case_of("", module, name, label).key


legacy_key = case_id.legacy_key
is_legacy = case_id.is_legacy
test_name = case_id.key_function


def find(entries: Mapping[str, E], module: str | Path, name: str, label: str | None,
         namesakes: Iterable[str | Path] = ()) -> tuple[str | None, E | None]:
    """find_case() for a test named by its file, name and label."""
    return find_case(entries, case_of("", module, name, label), namesakes)


def find_case(entries: Mapping[str, E], case: CaseId, namesakes: Iterable[str | Path] = ()) -> tuple[str | None, E | None]:
    """The key under which `entries` (one scale's) holds this case, and its entry; (None, None) where it holds none.

    The legacy key is read only where no other module could own it: no other
    test file of this stem was collected in the session (`namesakes`), and the
    file holds no keyed entry of this name from another file.
    """
    key = case.key
    if key in entries:
        return key, entries[key]
    old = case.legacy_key
    if old not in entries or any(True for _ in namesakes):
        return None, None
    tail = SEPARATOR + old
    if any(k.endswith(tail) and not is_legacy(k) and k != key for k in entries):
        return None, None
    return old, entries[old]


def kept_on_prune(keys: Iterable[str], collected: Mapping[str, Iterable[str]], root: Path | None = None,
                  anchors: Iterable[Path] | None = None, finished: Iterable[CaseId] = ()) -> set[str]:
    """The keys of one file (and scale) that name a test still collected; `collected`: module path -> test names,
    parameters included (a parameter removed is a test deleted), of the modules whose file it is (none: a file of
    no module collected, as a renamed module's); `root` the baselines folder (module_path); `anchors` the folders
    the session's keys are relative to (files.anchor_of), those of `collected` where not given; `finished` the
    cases measured by the tests that ran to their end (passed): such a test's keys of a label it did not measure
    (a label renamed or dropped, or its unlabelled case where it measures only labels) are dropped, while a test
    that failed or was skipped may not have reached its labels, and keeps them.

    A keyed entry of a test file the session did not collect (a namesake in a
    folder the command line left out: `pytest tests/a` beside tests/b/test_same.py)
    is kept while that file exists: only the entries of a file collected, or
    deleted, are the session's to drop. A legacy key is kept while a module of
    the file still has its test and the case has no keyed entry yet; once one
    is recorded, the legacy one is dropped, and so is one of a label (or the
    unlabelled case) that every collected test of its name ran to its end
    without measuring (`stale_legacy`). In a file of no module collected it is
    kept: whose test it is cannot be told.
    """
    keys = set(keys)
    names = {module_path(m, root): set(n) for m, n in collected.items()}
    anchors = {files.anchor_of(str(m), root) for m in collected} if anchors is None else set(anchors)
    if not names:
        return {k for k in keys if is_legacy(k) or any((anchor / case_id.key_path(k)).is_file() for anchor in anchors)}

    ran = measured_by(finished)

    def owned(key: str) -> bool:
        path = case_id.key_path(key)
        if path in names:
            return of_tests(case_id.key_case(key), names[path]) and not unmeasured(key, ran.get(path, {}))
        return path is not None and any((anchor / path).is_file() for anchor in anchors)

    kept = {k for k in keys if not is_legacy(k) and owned(k)}
    keyed = {case_id.key_case(k) for k in kept}
    every = set().union(*names.values()) if names else set()
    return kept | {k for k in keys if is_legacy(k) and of_tests(k, every) and k not in keyed
                   and not stale_legacy(k, names, ran)}


def stale_legacy(key: str, names: Mapping[str, set[str]], ran: Mapping[str, Mapping[str, set[str]]]) -> bool:
    """Whether a legacy key is a case that each collected test it could be of (one per module of its file holding a
    test of its name: `names`, path -> test names) ran to its end without measuring (`ran`: measured_by): a label
    renamed or dropped, whose entry would otherwise stay to be read again if the label came back."""
    owners = [path for path, tests in names.items() if of_tests(key, tests)]
    return bool(owners) and all(unmeasured(path + SEPARATOR + key, ran.get(path, {})) for path in owners)


def of_tests(case: str, tests: Iterable[str]) -> bool:
    """Whether a key's case ('<name>[::label]') is one of `tests` (names with their parameters): the name itself, or
    a labelled case of it. Matched whole, never split at '::', which a parameter's id may hold ('test_x[a::b]')."""
    return any(case == name or case.startswith(name + SEPARATOR) for name in tests)


def in_scope(key: str, scopes: Mapping[str, Iterable[str]]) -> bool:
    """Whether a keyed entry is of a test within `scopes` (test file's path from its project root -> scopes, each ""
    for the whole file or a test name without parameters: the test itself, its ids and labels, or a class's tests)."""
    path = case_id.key_path(key)
    case = case_id.key_case(key)
    return path in scopes and any(not scope or case == scope or case.startswith((f"{scope}.", f"{scope}[",
                                                                                  f"{scope}{SEPARATOR}"))
                                  for scope in scopes[path])


def measured_by(finished: Iterable[CaseId]) -> dict[str, dict[str, set[str]]]:
    """The keys each finished test measured: file path -> test name -> keys."""
    out: dict[str, dict[str, set[str]]] = {}
    for case in finished:
        out.setdefault(case.path, {}).setdefault(case.name, set()).add(case.key)
    return out


def unmeasured(key: str, ran: Mapping[str, set[str]]) -> bool:
    """Whether `key` is a case (a label, or the unlabelled case) of a test that ran to its end without measuring it;
    `ran`: its file's finished tests, name -> the keys they measured."""
    case = case_id.key_case(key)
    return any(key not in measured for name, measured in ran.items() if of_tests(case, [name]))
