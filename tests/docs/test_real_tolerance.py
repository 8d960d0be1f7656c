"""The real-scale default tolerance: set from the real-scale spread in the committed repeatability report, and used
where real-scale peaks are judged (the marker's default at that scale, FINDINGS.md's fix verdicts)."""

import json
import math
from pathlib import Path

from gpu_budget.declare.marks import DEFAULT_TOLERANCE, DEFAULT_TOLERANCE_BY_SCALE, default_tolerance, gpu_budget
from gpu_budget.report.findings import fix_verdict

ROOT = Path(__file__).resolve().parents[2]
MiB, GiB = 2**20, 2**30
MARGIN = 6  # the rule both defaults follow: at least 6x the spread measured at that scale (benchmarks/repeatability.py)


def _real_spreads() -> dict[str, list[int]]:
    real = json.loads((ROOT / "benchmarks/results/repeatability.json").read_text())["real"]
    out: dict[str, list[int]] = {}
    for r in real["runs"]:
        out.setdefault(r["case"], []).append(r["peaks"]["ram"])
    return out


def test_each_scale_has_its_default_and_a_partial_override_keeps_the_rest():
    real = DEFAULT_TOLERANCE_BY_SCALE["real"]
    assert default_tolerance("tiny") == DEFAULT_TOLERANCE and default_tolerance("real") == real
    assert gpu_budget(ram="1 GiB", scale="tiny").tolerance == DEFAULT_TOLERANCE
    assert gpu_budget(ram="1 GiB", scale="real").tolerance == real
    partial = gpu_budget(ram="1 GiB", tolerance={"abs": "1 MiB"}, scale="real").tolerance
    assert (partial.rel, partial.abs) == (real.rel, MiB)
    assert gpu_budget(ram="1 GiB", tolerance={"rel": 0.001}, scale="real").tolerance.rel == 0.001


def test_the_real_default_is_the_measured_real_spread_times_the_margin():
    spreads = _real_spreads()
    assert len(spreads) >= 3 and all(len(p) >= 3 for p in spreads.values())
    widest = max((max(p) - min(p)) / sorted(p)[len(p) // 2] for p in spreads.values())
    rel = DEFAULT_TOLERANCE_BY_SCALE["real"].rel
    assert rel == max(DEFAULT_TOLERANCE.rel, math.ceil(MARGIN * widest / 0.005 - 1e-9) * 0.005)
    for peaks in spreads.values():
        median = sorted(peaks)[len(peaks) // 2]
        assert DEFAULT_TOLERANCE_BY_SCALE["real"].limit(median) - median >= MARGIN * (max(peaks) - min(peaks))


def test_a_real_scale_fix_works_only_past_the_real_tolerance():
    real, before = DEFAULT_TOLERANCE_BY_SCALE["real"], 10 * GiB
    inside = int(before * (1 - (DEFAULT_TOLERANCE.rel + real.rel) / 2)) - 8 * MiB  # past the tiny default only
    assert fix_verdict(before, inside, "tiny") == "works"
    assert fix_verdict(before, inside, "real") == ("no effect" if real.rel > DEFAULT_TOLERANCE.rel else "works")
    assert fix_verdict(before, int(before * (1 - real.rel)) - 8 * MiB, "real") == "works"
