"""FINDINGS.md's fix rows where a run died of out-of-memory: what it held then bounds its peak, it does not measure it."""

import json

from gpu_budget.model.result import Result
from gpu_budget.report.findings import main, pairs

MiB = 2**20
OOM = {"kind": "oom", "type": "MemoryError", "message": "planted: cannot allocate"}


def row(label, fixes, ram, died=False):
    """A row as the gate writes it; `died`: its child died of out-of-memory under expect="over-budget", holding `ram`."""
    return {"scenario": "s", "scale": "tiny", "label": label, "fixes": fixes, "nodeid": f"m.py::t::{label}",
            "verdict": "over-budget" if died else "pass", "passed": True, "message": "", "info": {}, "wall_seconds": 1.0,
            "peaks": {"ram": ram, "ram_tree": ram, "vram_allocated": None}, **({"error": OOM} if died else {})}


def by_variant(*rows):
    return {e.variant: e for e in pairs([Result.from_json(r) for r in rows])["s"]}


def test_a_fix_whose_run_died_of_memory_early_shows_no_saving(tmp_path):
    """Before, a fix whose child died of out-of-memory 40 MiB in (expect="over-budget") read as the best fix of all:
    "| dies | dies | tiny | ram_tree | 359.13 MiB | 59.38 MiB | +83.5% | works |"; its figure is what it held when it
    died, so no saving is shown."""
    path, out = tmp_path / "r.json", tmp_path / "F.md"
    path.write_text(json.dumps({"version": 3, "results": [row("as-reported", [], 360 * MiB), row("dies", ["dies"], 60 * MiB, True)]}))
    assert main([str(path), "-o", str(out)]) == 0
    text = out.read_text()
    assert ("| dies | dies | tiny | ram_tree | 360.00 MiB | 60.00 MiB when it died of OOM | - | died of out-of-memory: "
            "its peak is at least what it held then, no saving shown |") in text


def test_a_fix_whose_run_died_above_the_as_reported_peak_makes_it_worse():
    """Held more than the as-reported run's peak by the time it died: worse, by at least that much."""
    entry = by_variant(row("as-reported", [], 300 * MiB), row("bigger", ["bigger"], 400 * MiB, True))["bigger"]
    assert entry.verdict == "makes it worse (died of out-of-memory)" and entry.saving == "at most -33.3%"


def test_a_fix_beside_an_as_reported_run_that_died_is_judged_only_where_the_bound_tells():
    """The as-reported figure is a lower bound: below it "works" (at least that saving); at or above it nothing is
    known (before, "no effect" or "makes it worse", and a saving "at least -33.3%")."""
    dead = row("as-reported", [], 300 * MiB, True)
    entries = by_variant(dead, row("lower", ["lower"], 200 * MiB), row("higher", ["higher"], 400 * MiB),
                         row("also", ["also"], 250 * MiB, True))
    assert entries["lower"].verdict == "works" and entries["lower"].saving == "at least +33.3%"
    assert entries["higher"].verdict.startswith("not told: the as-reported run died of out-of-memory")
    assert entries["higher"].saving == "-"
    assert entries["also"].verdict == "not told: both runs died of out-of-memory" and entries["also"].saving == "-"


def test_a_second_run_without_fixes_or_label_is_named_by_its_test():
    """A scenario's gated run `measure(S)` beside its labelled as-reported test read as a fix with no name: "|  | - |"."""
    plain = {**row(None, [], 301 * MiB), "nodeid": "memtests/test_s.py::test_gated"}
    assert set(by_variant(row("as-reported", [], 300 * MiB), plain)) == {"test_s.py::test_gated"}


def test_an_as_reported_run_that_died_of_memory_shows_its_figures_as_what_it_held_then(tmp_path):
    """Before, its "as reported" row read as a measured peak: "| tiny | ram_tree | 300.00 MiB | 300.00 MiB | - | ..."."""
    path, out = tmp_path / "r.json", tmp_path / "F.md"
    rows = [row("as-reported", [], 300 * MiB, True), row("lower", ["lower"], 200 * MiB)]
    path.write_text(json.dumps({"version": 3, "results": rows}))
    assert main([str(path), "-o", str(out)]) == 0
    assert ("| tiny | ram_tree | 300.00 MiB when it died of OOM | 300.00 MiB when it died of OOM | - | - | - "
            "| over-budget |") in out.read_text()
