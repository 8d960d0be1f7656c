"""Bytecode or source: which .pyc the import system would use, what the fingerprint records, what a row says."""

import importlib.util
import os
import py_compile
import sys
import types

import pytest

from gpu_budget.judge import fingerprint
from gpu_budget.judge.compare import judge
from gpu_budget.measure import host
from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.entry import Entry
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Measurement

MiB = 2**20


def _source(folder, name="mod", text="x = 1\n"):
    path = folder / f"{name}.py"
    path.write_text(text)
    return path


def test_a_pyc_whose_header_matches_the_source_is_usable_and_a_stale_or_missing_one_is_not(tmp_path):
    source = _source(tmp_path)
    assert not host.usable_pyc(str(source))  # none written
    py_compile.compile(str(source), invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    assert host.usable_pyc(str(source))
    stat = source.stat()
    os.utime(source, (stat.st_atime, stat.st_mtime + 10))  # edited since: the import recompiles
    assert not host.usable_pyc(str(source))
    source.write_text("x = 22\n")  # another size, mtime put back
    os.utime(source, (stat.st_atime, stat.st_mtime))
    assert not host.usable_pyc(str(source))


def test_a_pyc_of_another_python_is_not_usable(tmp_path):
    source = _source(tmp_path)
    cached = py_compile.compile(str(source))
    with open(cached, "r+b") as fh:
        fh.write(b"\x00\x00\r\n")  # another magic number
    assert not host.usable_pyc(str(source))


def test_hash_based_pycs_are_judged_as_the_import_judges_them(tmp_path):
    source = _source(tmp_path)
    py_compile.compile(str(source), invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    assert host.usable_pyc(str(source))
    source.write_text("x = 2\n")  # the same size, another hash
    assert not host.usable_pyc(str(source))
    py_compile.compile(str(source), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    source.write_text("x = 3\n")
    assert host.usable_pyc(str(source))  # unchecked: loaded whatever the source says


def test_the_cache_prefix_is_where_the_pyc_is_looked_for(tmp_path, monkeypatch):
    """PYTHONPYCACHEPREFIX moves every .pyc out of __pycache__: one beside the source is then not read."""
    source = _source(tmp_path)
    py_compile.compile(str(source))
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "prefix"))
    assert not host.usable_pyc(str(source))
    py_compile.compile(str(source), cfile=importlib.util.cache_from_source(str(source)))
    assert host.usable_pyc(str(source))


def _modules(folder, compiled: int, total: int) -> dict:
    """A sys.modules of one library, `torch`, of `total` modules, the first `compiled` with their .pyc written."""
    modules = {}
    for i in range(total):
        source = _source(folder, f"m{i}", f"x = {i}\n")
        if i < compiled:
            py_compile.compile(str(source))
        name = "torch" if i == 0 else f"torch.m{i}"
        modules[name] = types.SimpleNamespace(__spec__=types.SimpleNamespace(origin=str(source)))
    modules["numpy"] = modules["torch"]  # not one of the libraries: not counted
    return modules


@pytest.mark.parametrize("compiled, kind", [(20, "cached"), (18, "cached"), (10, "mixed"), (2, "source"), (0, "source")])
def test_the_libraries_imported_modules_decide(tmp_path, compiled, kind):
    facts = host.bytecode_seen(["torch"], _modules(tmp_path, compiled, 20))
    assert facts["bytecode"] == kind
    assert facts["bytecode_seen"].startswith(f"{compiled} of 20 modules with a usable .pyc; bytecode writes ")


def test_where_no_library_is_imported_each_installed_ones_init_is_checked_unimported(tmp_path, monkeypatch):
    package = tmp_path / "peft"
    package.mkdir()
    init = _source(package, "__init__", "raise RuntimeError('imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "peft", raising=False)
    assert host.library_sources(["peft"], {}) == [str(init)]
    assert host.bytecode_seen(["peft"], {})["bytecode"] == "source"
    py_compile.compile(str(init))
    assert host.bytecode_seen(["peft"], {})["bytecode"] == "cached"
    assert "peft" not in sys.modules
    assert host.bytecode_seen(["no_such_library_xyz"], {}) == {"bytecode": None, "bytecode_seen": None}


def test_the_seen_detail_says_whether_bytecode_may_be_written(tmp_path, monkeypatch):
    modules = _modules(tmp_path, 0, 2)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert "bytecode writes off (sys.dont_write_bytecode: PYTHONDONTWRITEBYTECODE or -B)" in \
        host.bytecode_seen(["torch"], modules)["bytecode_seen"]
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert host.bytecode_seen(["torch"], modules)["bytecode_seen"].endswith("bytecode writes on")


def test_the_probe_child_records_it():
    facts = host.child_facts()
    assert facts["bytecode"] in ("cached", "mixed", "source", None)
    assert ("bytecode_seen" in facts) and ("bytecode" in fingerprint.FOREIGN) and ("bytecode_seen" in fingerprint.INFO)


def test_a_baseline_without_the_field_or_with_nothing_checked_is_no_difference():
    now = {"bytecode": "source", "threads": 1}
    assert fingerprint.differences({"threads": 1}, now) == {}  # recorded before the field existed
    assert fingerprint.differences({"threads": 1, "bytecode": None}, now) == {}  # no library there to check
    assert fingerprint.differences({"bytecode": "cached"}, {"bytecode": None}) == {}
    assert fingerprint.differences({"bytecode": "cached"}, now) == {"bytecode": ("cached", "source")}
    assert fingerprint.worst_policy({"bytecode": ("cached", "source")}) == "foreign"


SEEN = "0 of 734 modules with a usable .pyc; bytecode writes off (sys.dont_write_bytecode: PYTHONDONTWRITEBYTECODE or -B)"


def test_the_row_names_the_bytecode_drift_and_its_cause():
    setup = fingerprint.between({"bytecode": "cached", "floor": 400 * MiB},
                          {"bytecode": "source", "bytecode_seen": SEEN, "floor": 400 * MiB})
    assert setup.policy == "foreign"
    (said,) = setup.described
    assert said == ("bytecode cached -> source (the libraries' modules loaded from their .pyc in the baseline's run, "
                    f"compiled from source in this one: {SEEN}): write their bytecode once (python -m compileall on the "
                    "environment, uv's --compile-bytecode) or run without PYTHONDONTWRITEBYTECODE")
    note = setup.note()
    assert note.startswith("setup differs from the baseline's: bytecode cached -> source (")
    assert note.endswith("host RAM not compared across these setups: record a baseline for this setup (--gpu-budget-update)")
    back = fingerprint.between({"bytecode": "source"}, {"bytecode": "cached", "bytecode_seen": "734 of 734 ..."})
    (said,) = back.described
    assert said == ("bytecode source -> cached (the libraries' modules compiled from source in the baseline's run, "
                    "loaded from their .pyc in this one: 734 of 734 ...)")


def test_compiling_from_source_is_no_improvement_of_host_ram_but_tensor_bytes_are_still_judged():
    """The drift the gate once called "improved": 3 % less host RAM, all from the baseline's compiling."""
    setup = fingerprint.between({"bytecode": "source"}, {"bytecode": "cached", "bytecode_seen": "734 of 734 ..."})
    tolerance = Tolerance(rel=0.005, abs=4 * MiB)
    baseline = Entry(peaks=Peaks(ram=1000 * MiB, ram_tensor=100 * MiB, vram_allocated=None))
    lower = Measurement("ok", Peaks(ram=970 * MiB, ram_tensor=100 * MiB, vram_allocated=None))
    j = judge(lower, Budget(), baseline, tolerance, ci=True, update=False, setup=setup)
    assert j.verdict == "pass" and "ram" not in j.change and "bytecode source -> cached" in j.message
    more = Measurement("ok", Peaks(ram=970 * MiB, ram_tensor=130 * MiB, vram_allocated=None))
    assert judge(more, Budget(), baseline, tolerance, ci=True, update=False, setup=setup).verdict == "regression"
