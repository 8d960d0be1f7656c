"""Which case a row, a baseline entry or a pending write is about (`CaseId`), and THE key rule of a baseline file.

A case is one measure() call of one test: the test's pytest node id, the label
the call gave (None: the test's only case), the test file's path from its
project root and the test's name in that file (its classes joined to it by '.',
parameters included: 'TestLoRA.test_train[2]', so two classes' methods of one
name are two cases). Its key in a baseline
file is '<file from the project root>::<test name>[::label]': baseline files
are named by the test module's stem, so two test files of one name in a project
share a file, and the path keeps their entries apart. Entries recorded before
the key held the path are keyed by '<test name>[::label]' alone (`legacy_key`);
judge/keys.py says when such an entry is still read. A row's node id is the
test's with '::label' added.
"""

from __future__ import annotations

from dataclasses import dataclass

SEPARATOR = "::"


@dataclass(frozen=True)
class CaseId:
    """One case: `nodeid` the test's node id ("memtests/test_s1.py::test_fix[lora]"), `label` the measure() call's
    (None: the test's only case), `path` the test file from its project root in POSIX form ("memtests/test_s1.py"),
    `name` the test's name with its parameters ("test_fix[lora]"), `module` the test file as collected (where its
    baseline file is found: judge/store.py)."""

    nodeid: str
    label: str | None
    path: str
    name: str
    module: str

    @property
    def key(self) -> str:
        """'<path>::<name>[::label]', e.g. 'memtests/test_s1_wav2vec2.py::test_fix[lora]::lora'."""
        return self.path + SEPARATOR + self.legacy_key

    @property
    def legacy_key(self) -> str:
        """The key entries were recorded under before it held the file's path: the name, '::label' added."""
        return legacy_key(self.name, self.label)

    @property
    def row_nodeid(self) -> str:
        """The node id of the case's row: the test's, '::label' added."""
        return self.nodeid + (f"{SEPARATOR}{self.label}" if self.label else "")

    @property
    def function(self) -> str:
        """The test function's name (its parameters left off)."""
        return self.name.split("[")[0]


def test_name(nodeid: str) -> str:
    """A test's name in its file, from its node id: its classes joined to it by '.', its parameters kept as they are
    ('test_keys.py::TestLoRA::test_train[a::b]' -> 'TestLoRA.test_train[a::b]')."""
    within = nodeid.split(SEPARATOR, 1)[1]
    name, bracket, params = within.partition("[")
    return name.replace(SEPARATOR, ".") + bracket + params


def legacy_key(name: str, label: str | None = None) -> str:
    return name + (f"{SEPARATOR}{label}" if label else "")


def strip_label(row_nodeid: str, label: str | None) -> str:
    """The test's node id, from its case's row's (a labelled case's row adds '::label': Result.test_nodeid)."""
    return row_nodeid[: -len(label) - len(SEPARATOR)] if label else row_nodeid


def is_legacy(key: str) -> bool:
    """A key without the file's path: its first part names no .py file, or is a parameter's text cut at a '::' in it
    ('test_fix[a.py::b]': a '[' left open). A path's own brackets are closed ('tests/c[1]/test_x.py::test_x')."""
    first = key.split(SEPARATOR, 1)[0]
    return not first.endswith(".py") or first.count("[") > first.count("]")


def key_path(key: str) -> str | None:
    """The test file's path a key holds; None in a legacy key."""
    return None if is_legacy(key) else key.split(SEPARATOR, 1)[0]


def key_case(key: str) -> str:
    """The part of a key after its file's path ('<name>[::label]'): a legacy key whole."""
    return key if is_legacy(key) else key.split(SEPARATOR, 1)[1]


def key_function(key: str) -> str:
    """The test function's name in a key of either form (parameters and label left off)."""
    return key_case(key).split(SEPARATOR)[0].split("[")[0]
