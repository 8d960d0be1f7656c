"""FINDINGS.md splits a fix's saving against its control only where both runs measured what they name."""

from gpu_budget.declare.fixes import Control
from gpu_budget.model.result import Result
from gpu_budget.report.findings import pairs, split_lines

MiB = 2**20
SPLIT = {"freeze_fp32": Control("quantization", "freezing alone", "freezing alone", "8-bit storage on top")}


def row(label, fixes, ram, info=None):
    return {"scenario": "s", "scale": "tiny", "label": label, "fixes": fixes, "nodeid": f"m.py::t::{label}",
            "verdict": "pass", "passed": True, "message": "", "info": info or {}, "wall_seconds": 1.0,
            "peaks": {"ram": ram, "ram_tree": ram, "vram_allocated": None}}


def split(*rows):
    return split_lines(pairs([Result.from_json(r) for r in rows])["s"], SPLIT)


def test_a_split_is_said_where_both_fixes_were_applied():
    (line,) = split(row("as-reported", [], 1000 * MiB), row("quantization", ["quantization"], 600 * MiB),
                    row("freeze_fp32", ["freeze_fp32"], 700 * MiB))
    assert "freezing alone 700.00 MiB, saving 300.00 MiB (+30.0%, works)" in line


def test_no_split_of_a_fix_or_control_its_runner_reports_not_applied():
    """Its table row reads "not applied here": it measured the case unchanged, so no part of a saving is its. Before,
    the split said "quantization's saving split (ram_tree): as reported 1000.00 MiB; freezing alone 700.00 MiB, saving
    300.00 MiB (+30.0%, works); 8-bit storage on top: quantization 600.00 MiB, 100.00 MiB lower than freezing alone
    (saving +10.0% of as reported, works)" with either run's fix reported not applied."""
    skipped = {"fixes_applied": {"quantization": "not applied: no bitsandbytes"}}
    assert split(row("as-reported", [], 1000 * MiB), row("quantization", ["quantization"], 600 * MiB, skipped),
                 row("freeze_fp32", ["freeze_fp32"], 700 * MiB)) == []
    skipped = {"fixes_applied": {"freeze_fp32": "not applied: CPU run"}}
    assert split(row("as-reported", [], 1000 * MiB), row("quantization", ["quantization"], 600 * MiB),
                 row("freeze_fp32", ["freeze_fp32"], 700 * MiB, skipped)) == []


def test_no_split_beside_an_as_reported_run_that_died_of_memory():
    """Its figure is what it held when it died, a lower bound of its peak: the fix table reads "not told" and shows no
    saving. Before, the split quoted one from it: "as reported 500.00 MiB; freezing alone 700.00 MiB, saving -200.00
    MiB (-40.0%, makes it worse); ... (saving +20.0% of as reported, works)"."""
    oom = {"kind": "oom", "type": "MemoryError", "message": "planted: cannot allocate"}
    dead = {**row("as-reported", [], 500 * MiB), "verdict": "over-budget", "error": oom}
    assert split(dead, row("quantization", ["quantization"], 600 * MiB), row("freeze_fp32", ["freeze_fp32"], 700 * MiB)) == []


def test_a_fix_its_runner_reports_not_applied_shows_no_saving():
    """Its run measured the case unchanged: the difference is two runs' noise, no saving of the fix's. Before:
    "| gc | gradient_checkpointing | tiny | ram_tree | 1000.00 MiB | 990.00 MiB | +1.0% | not applied here (...)"."""
    skipped = {"fixes_applied": {"gradient_checkpointing": "not supported: no checkpointing switch"}}
    (entry,) = pairs([Result.from_json(r) for r in (row("as-reported", [], 1000 * MiB),
                                                    row("gc", ["gradient_checkpointing"], 990 * MiB, skipped))])["s"]
    assert entry.verdict.startswith("not applied here") and entry.saving == "-"


def test_a_variant_whose_fix_was_not_applied_still_shows_its_change():
    """A variant's change comes from its other params, not its fix: "not applied here" hides no figure of it."""
    from gpu_budget.report.findings_variants import change

    skipped = {"fixes_applied": {"gradient_checkpointing": "not supported"}}
    ref, small = row("as-reported", [], 1000 * MiB), row("small", ["gradient_checkpointing"], 500 * MiB, skipped)
    ref["params"], small["params"] = {"batch_size": 8}, {"batch_size": 1}
    (entry,) = pairs([Result.from_json(r) for r in (ref, small)])["s"]
    assert entry.knobs == ("batch_size 8 → 1",) and change(entry) == "-50.0%"
