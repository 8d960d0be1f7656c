"""FINDINGS.md tells a fix of a scenario from a variant of it by the params each row ran with: a case measured with
other params than its as-reported run (S.with_params(...)) is a variant, shown apart, never a fix that "works"."""

import json

from gpu_budget.model.result import Result
from gpu_budget.report.findings import main, pairs

MiB = 2**20
BASE = {"batch_size": 4, "dataloader_workers": 2}


def row(label, fixes, ram, params=BASE):
    """A row as the gate writes it, with the params it ran with (None: a row of a report from before they were kept)."""
    return {"scenario": "s", "scale": "tiny", "label": label, "fixes": fixes, "nodeid": f"m.py::t::{label}",
            "verdict": "pass", "passed": True, "message": "", "info": {}, "wall_seconds": 1.0,
            "peaks": {"ram": ram, "ram_tree": ram, "vram_allocated": None},
            **({} if params is None else {"params": params})}


def by_variant(*rows):
    return {e.variant: e for e in pairs([Result.from_json(r) for r in rows])["s"]}


def test_a_params_variant_is_shown_as_a_variant_not_as_a_fix_that_works(tmp_path):
    """Before, `measure(S.with_params(batch_size=1), label="batch 1")` read as a fix of the as-reported run:
    "| batch 1 | - | tiny | ram_tree | 400.00 MiB | 100.00 MiB | +75.0% | works | 400.00 MiB, 100.00 MiB |"."""
    path, out = tmp_path / "r.json", tmp_path / "F.md"
    rows = [row("as-reported", [], 400 * MiB), row("batch 1", [], 100 * MiB, {**BASE, "batch_size": 1}),
            row("longer clips", [], 500 * MiB, {**BASE, "clip_seconds": 30}),
            row("fewer_workers", ["fewer_workers"], 300 * MiB, {**BASE, "dataloader_workers": 1})]
    path.write_text(json.dumps({"version": 3, "results": rows}))
    assert main([str(path), "-o", str(out)]) == 0
    text = out.read_text()
    assert "| batch 1 | - |" not in text and "works | 400.00 MiB, 100.00 MiB" not in text
    assert ("| batch 1 | batch_size 4 → 1 | - | tiny | ram_tree | 400.00 MiB | 100.00 MiB | -75.0% | lower "
            "| 400.00 MiB, 100.00 MiB |") in text
    assert "| longer clips | clip_seconds unset → 30 | - | tiny | ram_tree | 400.00 MiB | 500.00 MiB | +25.0% | higher |" in text
    # the fix sets dataloader_workers=1 itself (fixes.py): a fix, in the fix table
    assert "| fewer_workers | fewer_workers | tiny | ram_tree | 400.00 MiB | 300.00 MiB | +25.0% | works |" in text
    assert text.index("| fewer_workers | fewer_workers |") < text.index("Variants of the scenario")


def test_a_fix_with_params_of_its_own_set_beside_it_is_a_variant():
    """A fix applied together with a knob no fix sets is no fix set alone: its saving is not the fix's."""
    entries = by_variant(row("as-reported", [], 400 * MiB),
                         row("fewer_workers, batch 2", ["fewer_workers"], 200 * MiB,
                             {"batch_size": 2, "dataloader_workers": 1}))
    assert entries["fewer_workers, batch 2"].knobs == ("batch_size 4 → 2",)


def test_rows_from_before_params_were_kept_pair_as_they_did():
    """A report written before rows carried params cannot tell: its rows pair as a fix, as before."""
    entries = by_variant(row("as-reported", [], 400 * MiB, None), row("batch 1", [], 100 * MiB, None))
    assert entries["batch 1"].knobs == () and entries["batch 1"].verdict == "works"


def test_a_fix_not_registered_here_is_read_as_a_fix_since_its_params_are_unknown():
    entries = by_variant(row("as-reported", [], 400 * MiB), row("mine", ["not_registered_anywhere"], 300 * MiB,
                                                                 {**BASE, "batch_size": 2}))
    assert entries["mine"].knobs == () and entries["mine"].verdict == "works"


def test_a_variant_on_a_gpu_is_in_the_gpu_variants_table_naming_its_card(tmp_path):
    card = {"key": "nvidia-test-80gb", "gpu_name": "NVIDIA Test 80GB", "driver": "999.1.2", "cuda": "13.9",
            "torch": "2.99.0", "transformers": "5.99.0", "peft": "0.99.0"}

    def on_gpu(label, allocated, params):
        return {**row(label, [], 900 * MiB, params), "device": "cuda",
                "peaks": {"ram": 900 * MiB, "ram_tree": 900 * MiB, "vram_allocated": allocated, "vram_reserved": allocated}}

    path, out = tmp_path / "gpu.json", tmp_path / "F.md"
    path.write_text(json.dumps({"version": 3, "hardware": card, "results": [
        on_gpu("as-reported", 400 * MiB, BASE), on_gpu("batch 1", 100 * MiB, {**BASE, "batch_size": 1})]}))
    assert main([str(path), "-o", str(out)]) == 0
    text = out.read_text()
    assert "| card | variant | fixes |" not in text  # no fix table: the run beside it is no fix
    assert ("| NVIDIA Test 80GB, driver 999.1.2, CUDA 13.9; torch 2.99.0, transformers 5.99.0, peft 0.99.0 | batch 1 "
            "| batch_size 4 → 1 | - | tiny | vram_allocated | 400.00 MiB | 100.00 MiB | -75.0% | lower |") in text
