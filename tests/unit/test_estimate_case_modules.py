"""`estimate a/cases.py:S b/cases.py:S`: each case is read from the file it names, not from another file that has
the same import name and was imported first (two experiment folders, two checkouts of one project)."""

import sys

import pytest

from gpu_budget.declare.scenario import Scenario
from gpu_budget.estimate.cases import CaseError, load_case

STEM = "dt_same_stem_cases"  # one import name for both files, no other test's


@pytest.fixture
def forget(monkeypatch):
    """sys.modules and sys.path as they were, after the test: the modules it imports are its own."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


def case_file(folder, name: str, package: bool = False):
    """A case module, `S` a Scenario named `name`, under folder (in a package `pkg` there if asked)."""
    where = folder / "pkg" if package else folder
    where.mkdir(parents=True)
    if package:
        (where / "__init__.py").write_text("")
    (where / f"{STEM}.py").write_text(f"from gpu_budget import Scenario\n\nS = Scenario(name={name!r}, run='x:run')\n")
    return where / f"{STEM}.py"


def test_two_files_of_one_import_name_are_each_their_own_case(tmp_path, forget):
    """Before: b's case was a's Scenario (the module `dt_same_stem_cases` already imported), so its table row held
    a's figures under b's label (S5 beside S5+smaller_batch: 333.20 MiB both, where b alone is 271.49 MiB)."""
    a, b = case_file(tmp_path / "a", "from_a"), case_file(tmp_path / "b", "from_b")
    first, second = load_case(f"{a}:S"), load_case(f"{b}:S")
    assert isinstance(second, Scenario)
    assert (first.name, second.name) == ("from_a", "from_b")
    assert load_case(f"{a}:S").name == "from_a"  # the first file again: still its own


def test_two_packages_of_one_name_are_refused_naming_both_files(tmp_path, forget):
    """A module inside a package imports its siblings by the package's name, which is the first file's: the second
    cannot be read as its own, so it is refused, not estimated from the first."""
    a, b = case_file(tmp_path / "a", "from_a", package=True), case_file(tmp_path / "b", "from_b", package=True)
    assert load_case(f"{a}:S").name == "from_a"
    with pytest.raises(CaseError) as refused:
        load_case(f"{b}:S")
    said = str(refused.value)
    assert f"case '{b}:S': {b} imports as 'pkg.{STEM}', which this run imported from {a}" in said, said
