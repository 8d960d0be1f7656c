"""Per-case file names: stable, file-system safe, and distinct for distinct cases."""

from pathlib import Path

from gpu_budget.artifacts import keep_snapshot, slug, snapshot_request


def test_slug_names_a_case_by_module_test_params_and_label():
    assert slug("memtests/test_s1.py::test_fix[lora+load_in_8bit]::lora+load_in_8bit") == (
        "test_s1__test_fix-lora-load_in_8bit__lora-load_in_8bit")
    assert slug("memtests/test_s5.py::test_as_reported") == "test_s5__test_as_reported"
    assert slug("a.py::t[x/y z]") != slug("a.py::t[x]")
    assert len(slug("m.py::t[" + "x" * 400 + "]")) == 150


def test_no_snapshot_without_cuda():
    assert snapshot_request({"cuda": False}, mark=None, baseline=None) is None
    assert snapshot_request(None, mark=None, baseline=None) is None


def test_a_kept_snapshot_moves_next_to_the_report(tmp_path):
    tmp = tmp_path / "child.pickle"
    tmp.write_bytes(b"snapshot")
    kept = keep_snapshot(str(tmp), tmp_path / "snapshots", "memtests/test_s2.py::test_as_reported::as-reported")
    assert kept == str(tmp_path / "snapshots" / "test_s2__test_as_reported__as-reported.pickle")
    assert not tmp.exists() and Path(kept).read_bytes() == b"snapshot"
