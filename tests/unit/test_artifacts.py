"""Per-case file names: stable, file-system safe, and distinct for distinct cases."""

from pathlib import Path

from gpu_budget.declare.marks import BudgetMark
from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Failure, Measurement
from gpu_budget.report import artifacts
from gpu_budget.report.artifacts import file_names, keep_snapshot, slug, wants_snapshot

GiB = 2**30


def test_slug_names_a_case_by_module_test_params_and_label():
    assert slug("memtests/test_s1.py::test_fix[lora+load_in_8bit]::lora+load_in_8bit") == (
        "test_s1__test_fix-lora-load_in_8bit__lora-load_in_8bit")
    assert slug("memtests/test_s5.py::test_as_reported") == "test_s5__test_as_reported"
    assert slug("a.py::t[x/y z]") != slug("a.py::t[x]")
    assert len(slug("m.py::t[" + "x" * 400 + "]")) == 150


def test_file_names_tell_apart_node_ids_whose_slugs_coincide():
    ids = ["a.py::t[x y]", "a.py::t[x-y]", "one/test_m.py::t", "two/test_m.py::t", "a.py::t[z]"]
    names = file_names(ids)
    assert len(set(names.values())) == len(ids)
    assert names["a.py::t[z]"] == "a__t-z"  # a slug no other id shares stays as it was
    assert names["a.py::t[x y]"].startswith("a__t-x-y-") and names["one/test_m.py::t"].startswith("test_m__t-")
    assert file_names(reversed(ids)) == names  # the same names whatever order the cases ran in


def measured(peak=None, cuda=True, error=None):
    return Measurement("error" if error else "ok", Peaks(ram=GiB, vram_allocated=peak), cuda=cuda,
                       error=Failure(kind=error) if error else None)


def mark(vram=None):
    return BudgetMark(Budget(vram=vram), Tolerance(rel=0.0, abs=0), None, "cuda")


def test_a_snapshot_run_only_for_a_cuda_failure_the_recorder_can_show():
    assert not wants_snapshot(measured(12 * GiB, cuda=False), mark(10 * GiB), None)  # a CPU child records nothing
    assert wants_snapshot(measured(12 * GiB), mark(10 * GiB), None)  # over the VRAM budget
    assert not wants_snapshot(measured(8 * GiB), mark(10 * GiB), None)  # a host-RAM failure: nothing on the GPU to show
    baseline = Peaks(vram_allocated=4 * GiB)  # the baseline entry's peaks
    assert wants_snapshot(measured(5 * GiB), mark(), baseline)  # past the baseline's regression limit
    assert not wants_snapshot(measured(4 * GiB), mark(), baseline)
    assert wants_snapshot(measured(error="oom"), mark(), None) and wants_snapshot(measured(error="exception"), mark(), None)
    assert not wants_snapshot(measured(error="timeout"), mark(), None)  # a killed child dumps nothing
    assert not wants_snapshot(measured(error="killed"), mark(), None)


def test_a_kept_snapshot_moves_next_to_the_report(tmp_path):
    tmp = tmp_path / "child.pickle"
    tmp.write_bytes(b"snapshot")
    kept = keep_snapshot(str(tmp), tmp_path / "snapshots", "memtests/test_s2.py::test_as_reported::as-reported")
    assert kept == str(tmp_path / "snapshots" / "test_s2__test_as_reported__as-reported.pickle")
    assert not tmp.exists() and Path(kept).read_bytes() == b"snapshot"


def test_a_kept_snapshot_takes_a_hash_where_another_test_has_its_name(tmp_path):
    tests = ["tests/a/test_same.py::test_over", "tests/b/test_same.py::test_over", "tests/a/test_other.py::test_over"]
    assert artifacts.shared_slugs(tests) == {slug(tests[0])} == {slug(tests[1])}
    assert not artifacts.shared_slugs(tests[:1] * 2)  # one test listed twice shares its name with no other
    kept = []
    for nodeid in tests[:2]:
        tmp = tmp_path / "child.pickle"
        tmp.write_bytes(nodeid.encode())
        kept.append(keep_snapshot(str(tmp), tmp_path / "snapshots", f"{nodeid}::lora", shared=True))
    assert len(set(kept)) == 2 and [Path(k).read_bytes().decode() for k in kept] == tests[:2]
    assert file_names(f"{t}::lora" for t in tests[:2]) == {f"{t}::lora": Path(k).stem for t, k in zip(tests, kept)}
