"""FINDINGS.md judges a fix against the tolerance its case was judged with: the marker's, else the scale's default."""

import json

from gpu_budget.declare.fixes import Control
from gpu_budget.model.budget import Tolerance
from gpu_budget.model.result import Result
from gpu_budget.report.findings import main, pairs, split_lines
from gpu_budget.units import format_size

MiB = 2**20
WIDE = {"rel": 0.05, "abs": 4 * MiB}  # a marker's tolerance={"rel": 0.05}: the case's runs spread that much


def row(label, fixes, ram, tolerance=None):
    return {"scenario": "s", "scale": "tiny", "label": label, "fixes": fixes, "nodeid": f"m.py::t::{label}",
            "verdict": "pass", "passed": True, "message": "", "info": {}, "wall_seconds": 1.0,
            "peaks": {"ram": ram, "ram_tree": ram, "vram_allocated": None}, **({"tolerance": tolerance} if tolerance else {})}


def test_a_change_inside_the_declared_tolerance_is_no_effect(tmp_path):
    """Before, a case declaring tolerance={"rel": 0.05} had a fix 8 MiB lower (2.5 %) called a saving the gate
    itself calls noise: "| trim | trim | tiny | ram_tree | 319.34 MiB | 311.34 MiB | +2.5% | works |"."""
    path, out = tmp_path / "r.json", tmp_path / "F.md"
    rows = [row("as-reported", [], 320 * MiB, WIDE), row("trim", ["trim"], 312 * MiB, WIDE),
            row("halve", ["halve"], 160 * MiB, WIDE), row("worse", ["worse"], 330 * MiB, WIDE)]
    path.write_text(json.dumps({"version": 3, "results": rows}))
    assert main([str(path), "-o", str(out)]) == 0
    text = out.read_text()
    noise = f"within noise (±{format_size(Tolerance(**WIDE).limit(320 * MiB) - 320 * MiB)})"
    assert f"| trim | trim | tiny | ram_tree | 320.00 MiB | 312.00 MiB | {noise} | no effect |" in text
    assert "| halve | halve | tiny | ram_tree | 320.00 MiB | 160.00 MiB | +50.0% | works |" in text
    assert f"| worse | worse | tiny | ram_tree | 320.00 MiB | 330.00 MiB | {noise} | no effect |" in text


def test_a_row_without_a_tolerance_takes_the_scale_default():
    """A report written before rows held their tolerance: the scale's default, as before."""
    by = {e.variant: e for e in pairs([Result.from_json(r) for r in
                                       (row("as-reported", [], 320 * MiB), row("trim", ["trim"], 312 * MiB))])["s"]}
    assert by["trim"].verdict == "works"


def test_a_split_part_is_judged_with_the_declared_tolerance_too():
    rows = [row("as-reported", [], 1000 * MiB, WIDE), row("quantization", ["quantization"], 600 * MiB, WIDE),
            row("freeze_fp32", ["freeze_fp32"], 630 * MiB, WIDE)]
    split = Control("quantization", "freezing alone", "freezing alone", "8-bit storage on top")
    (line,) = split_lines(pairs([Result.from_json(r) for r in rows])["s"], {"freeze_fp32": split})
    noise = format_size(Tolerance(**WIDE).limit(630 * MiB) - 630 * MiB)
    assert line.endswith(f"quantization 600.00 MiB, within noise (±{noise}) of freezing alone (no effect)")


def test_a_change_inside_the_spread_its_baseline_stored_is_no_effect():
    """The as-reported case's baseline was recorded over 5 fresh runs that parted by 20 MiB (the gate allows a figure
    6x that); a fix 15 MiB lower is inside it. Before: "| trim | trim | tiny | ram_tree | 1000.00 MiB | 985.00 MiB |
    +1.5% | works |", a saving its own case's fresh runs part by."""
    ref = row("as-reported", [], 1000 * MiB)
    ref["baseline"] = {"peaks": {"ram": 1000 * MiB, "ram_tree": 1000 * MiB}, "recorded": "2026-01-01", "fingerprint": {},
                       "phases": {}, "spread": {"runs": 5, "by_metric": {"ram_tree": 20 * MiB}}}
    by = {e.variant: e for e in pairs([Result.from_json(r) for r in
                                       (ref, row("trim", ["trim"], 985 * MiB), row("halve", ["halve"], 500 * MiB))])["s"]}
    assert by["trim"].verdict == "no effect" and by["halve"].verdict == "works"
