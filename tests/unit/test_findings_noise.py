"""FINDINGS.md quotes no saving finer than the noise its verdict is judged against: inside it, "within noise (±X)"."""

import json
from pathlib import Path

from gpu_budget.declare.fixes import Control
from gpu_budget.declare.marks import default_tolerance
from gpu_budget.model.entry import SPREAD_MULTIPLE
from gpu_budget.model.result import Result
from gpu_budget.report.findings import pairs, split_lines
from gpu_budget.report.findings_variants import variant_lines
from gpu_budget.units import format_size

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
MiB = 2**20


def measured(name):
    return [Result.from_json(r) for r in json.loads((RESULTS / name).read_text())["results"]]


def row(label, fixes, ram, spread=None, **more):
    out = {"scenario": "s", "scale": "tiny", "label": label, "fixes": fixes, "nodeid": f"m.py::t::{label}",
           "verdict": "pass", "passed": True, "message": "", "info": {}, "wall_seconds": 1.0,
           "peaks": {"ram": ram, "ram_tree": ram, "vram_allocated": None}, **more}
    if spread is not None:
        out["baseline"] = {"peaks": {"ram": ram, "ram_tree": ram}, "recorded": "2026-01-01", "fingerprint": {},
                           "phases": {}, "spread": spread}
    return out


def test_a_measured_fix_inside_the_tolerance_says_within_noise_not_a_figure():
    """S1's tiny runs as measured (suite-tiny-all): lora 1.91 MiB above the as-reported run, inside the tolerance's
    7 MiB. Before: "| lora | lora | tiny | ram_tree | 669.52 MiB | 671.43 MiB | -0.3% | no effect |", a saving to a
    tenth of a percent that the runs cannot tell from nothing."""
    entries = [e for e in pairs(measured("suite-tiny-all.report.json"))["s1_wav2vec2"] if e.compared]
    quiet = [e for e in entries if e.verdict == "no effect"]
    assert {e.variant for e in quiet} >= {"lora", "gc_collect", "runner"}
    for e in quiet:
        tol = default_tolerance(e.scale)
        assert e.saving == f"within noise (±{format_size(tol.limit(e.before) - e.before)})", e
    for e in entries:
        if e.verdict in ("works", "makes it worse"):
            assert e.saving.endswith("%") and "noise" not in e.saving, e


def test_the_noise_a_stored_spread_measured_widens_the_band_said():
    """The pool case's baseline stored how far 5 fresh runs of its process tree parted (stored_spread.json); a fix
    whose figure moves by less than the gate allows for that spread is within it, the band said being that allowance."""
    case = json.loads((RESULTS / "stored_spread.json").read_text())["cases"]["pool"]["entry"]
    spread, before = case["spread"], case["peaks"]["ram_tree"]
    wide = SPREAD_MULTIPLE * spread["by_metric"]["ram_tree"]
    rows = [row("as-reported", [], before, spread), row("trim", ["trim"], before - wide // 2),
            row("halve", ["halve"], before - 2 * wide)]
    by = {e.variant: e for e in pairs([Result.from_json(r) for r in rows])["s"]}
    assert by["trim"].verdict == "no effect" and by["trim"].saving == f"within noise (±{format_size(wide)})"
    assert by["halve"].verdict == "works" and by["halve"].saving.startswith("+")


def test_a_variant_inside_the_noise_says_so_too():
    rows = [row("as-reported", [], 500 * MiB, params={"batch_size": 8}),
            row("batch-7", [], 501 * MiB, params={"batch_size": 7})]
    (line,) = [x for x in variant_lines([(None, e) for e in pairs([Result.from_json(r) for r in rows])["s"]])
               if x.startswith("| batch-7")]
    assert f"| within noise (±{format_size(default_tolerance('tiny').limit(500 * MiB) - 500 * MiB)}) |" in line


def test_a_split_part_inside_the_noise_is_said_so_not_as_a_saving():
    """Before: "freezing alone 999.00 MiB, saving 1.00 MiB (+0.1%, no effect); ... 1.00 MiB lower than freezing alone
    (saving +0.1% of as reported, no effect)": a saving a megabyte fine beside a noise of nine."""
    rows = [row("as-reported", [], 1000 * MiB), row("quantization", ["quantization"], 998 * MiB),
            row("freeze_fp32", ["freeze_fp32"], 999 * MiB)]
    split = {"freeze_fp32": Control("quantization", "freezing alone", "freezing alone", "8-bit storage on top")}
    (line,) = split_lines(pairs([Result.from_json(r) for r in rows])["s"], split)
    tol = default_tolerance("tiny")
    assert line.endswith(f"freezing alone 999.00 MiB, saving within noise (±{format_size(tol.limit(1000 * MiB) - 1000 * MiB)}), "
                         f"no effect; 8-bit storage on top: quantization 998.00 MiB, within noise "
                         f"(±{format_size(tol.limit(999 * MiB) - 999 * MiB)}) of freezing alone (no effect)")


def test_a_bound_inside_the_noise_tells_nothing():
    """A run that died of out-of-memory left a bound; inside the noise it tells nothing either way. Before: "at least
    +0.2%" beside "not told"."""
    died = {"kind": "oom", "type": "MemoryError", "message": "planted: cannot allocate"}
    rows = [row("as-reported", [], 1000 * MiB, verdict="over-budget", error=died), row("trim", ["trim"], 998 * MiB)]
    (e,) = pairs([Result.from_json(r) for r in rows])["s"]
    assert e.before_died and e.saving == "-"
