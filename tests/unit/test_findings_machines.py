"""FINDINGS.md compares each fix with its as-reported run: the CPU reports it merges must come from one machine."""

import json

import pytest

from gpu_budget.report.findings import main

MiB = 2**20


def row(label, fixes, ram):
    return {"scenario": "s", "scale": "tiny", "label": label, "fixes": fixes, "nodeid": f"m.py::t::{label}",
            "verdict": "pass", "passed": True, "message": "", "info": {}, "wall_seconds": 1.0,
            "peaks": {"ram": ram, "ram_tree": ram, "vram_allocated": None}}


def reports(tmp_path, second):
    first, later = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"version": 3, "hardware": {"key": "cpu-x86_64", "torch": "2.13.0+cpu"},
                                 "results": [row("as-reported", [], 600 * MiB), row("trim", ["trim"], 500 * MiB)]}))
    later.write_text(json.dumps({"version": 3, "hardware": second, "results": [row("as-reported", [], 700 * MiB)]}))
    return [str(first), str(later), "-o", str(tmp_path / "F.md")]


def test_reports_from_two_library_sets_are_refused_naming_both(tmp_path, capsys):
    """Before, a.json's trim (torch 2.13) was judged against b.json's as-reported run (torch 2.14), under a header
    naming torch 2.13 alone: "| trim | trim | tiny | ram_tree | 700.00 MiB | 500.00 MiB | +28.6% | works |", where
    its own session measured 600 MiB beside it."""
    with pytest.raises(SystemExit) as exc:
        main(reports(tmp_path, {"key": "cpu-x86_64", "torch": "2.14.0+cpu"}))
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert (f"{tmp_path / 'b.json'} was measured on `cpu-x86_64` (torch 2.14.0+cpu), {tmp_path / 'a.json'} on "
            "`cpu-x86_64` (torch 2.13.0+cpu): a fix is judged against") in err
    assert not (tmp_path / "F.md").exists()


def test_reports_from_one_machine_merge(tmp_path):
    assert main(reports(tmp_path, {"key": "cpu-x86_64", "torch": "2.13.0+cpu"})) == 0
    assert "| trim | trim | tiny | ram_tree | 700.00 MiB | 500.00 MiB | +28.6% | works |" in (tmp_path / "F.md").read_text()
