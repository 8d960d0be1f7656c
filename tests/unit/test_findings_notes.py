"""What a runner says of fixes its row did not apply is no word on the fixes the row did apply."""

from gpu_budget.model.result import Result
from gpu_budget.report.findings import pairs

MiB = 2**20


def row(label, fixes, ram, info=None):
    return {"scenario": "s", "scale": "tiny", "label": label, "fixes": fixes, "nodeid": f"m.py::t::{label}",
            "verdict": "pass", "passed": True, "message": "", "info": info or {}, "wall_seconds": 1.0,
            "peaks": {"ram": ram, "ram_tree": ram, "vram_allocated": None}}


def test_a_runner_note_of_a_fix_the_row_did_not_apply_leaves_its_own_fixes_judged():
    """A runner that reports every fix it knows ({"truncate": "applied", "amp": "not applied: CUDA-only"}) on a row
    that applied truncate alone. Before: "| truncate | ... | - | not applied here (amp: not applied: CUDA-only) |",
    truncate's measured 40 % hidden behind a fix the row never had."""
    notes = {"fixes_applied": {"truncate": "applied", "amp": "not applied: CUDA-only"}}
    rows = [row("as-reported", [], 1000 * MiB, info={"fixes_applied": {"amp": "not applied: CUDA-only"}}),
            row("truncate", ["truncate"], 600 * MiB, info=notes),
            row("truncate+amp", ["truncate", "amp"], 600 * MiB, info=notes)]
    by = {e.variant: e for e in pairs([Result.from_json(r) for r in rows])["s"]}
    assert by["truncate"].verdict == "works" and by["truncate"].saving == "+40.0%"
    assert by["truncate+amp"].verdict == "not applied here (amp: not applied: CUDA-only)"  # its own fix: as before
