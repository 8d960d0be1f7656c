"""The growth rule's allowances come from committed reports, and the committed growth run meets the issue's targets.

Host RAM's allowance is the largest growth the calibration runs of
benchmarks/results/growth.json read; GPU allocated's is the largest rise between
steady steps in the clean cases of the H200 report. The validation runs, judged
again here by the committed rule, must raise no false alarm and catch every
planted leak; docs/declaring.md's paragraph on steps= quotes the same figures.
"""

import json
from itertools import pairwise

import pytest
from doc_checkers import declaring_growth
from doc_figures import ROOT, document, load

from benchmarks.growth_leak import GROWTH_TARGETS, allowance_of, growth_summary, steps_of
from gpu_budget.declare.scenario import Budget
from gpu_budget.judge import growth

RUN = "benchmarks/results/growth.json"
GPU = "benchmarks/results/gpu-h200-tiny-2.report.json"
DECLARING = "docs/declaring.md"


@pytest.fixture(scope="module")
def run() -> dict:
    return json.loads((ROOT / RUN).read_text())


def test_the_run_is_complete_at_8_steps_with_10_runs_of_each_kind(run):
    assert run["complete"] and run["steps"] == 8 and run["leak_mib"] == 1.5 and run["declared_steps"] == 10_000
    kinds = [(r["case"], r["stage"]) for r in run["runs"]]
    for kind in [("s1 clean", "calibration"), ("s5 clean", "calibration"), ("s1 clean", "validation"),
                 ("s5 clean", "validation"), ("s1 leak", "validation")]:
        assert kinds.count(kind) == run["runs_per_kind"] == 10, kind
    assert all(len(r["steps"]) == 8 and r["exit_code"] in (0, None) for r in run["runs"])


def test_the_host_ram_allowance_is_the_calibration_runs_largest_growth(run):
    assert growth.RAM_ALLOWANCE == run["allowance"] == allowance_of(run["runs"]) > 0
    assert growth.ALLOWANCE["ram"] == growth.ALLOWANCE["ram_tree"] == growth.RAM_ALLOWANCE


def gpu_rises() -> dict[str, list[int]]:
    """Each clean fixed-shape case's rises of the peak so far between its steady steps (after warm-up), H200."""
    rises = {}
    for row in load(GPU)["results"]:
        series = [s.get("vram_allocated") for s in row["steps"]][growth.WARMUP:]
        if row["scenario"].startswith("s2_") or len(series) < 2 or None in series or row.get("error"):
            continue  # S2's batches change shape step to step by design: its growth is its data
        envelope = [max(series[: i + 1]) for i in range(len(series))]
        rises[row["nodeid"]] = [b - a for a, b in pairwise(envelope)]
    return rises


def test_the_gpu_allowance_is_the_largest_clean_rise_on_the_h200():
    rises = gpu_rises()
    assert len(rises) == 16  # S1's cases, 4 steps each (S3's and S4's 3 steps leave one steady step, S5's 2 none)
    assert growth.ALLOWANCE["vram_allocated"] == max(max(r) for r in rises.values()) == 20_480
    assert sum(any(r) for r in rises.values()) == 4  # S1's worker cases; every other case flat to the byte


def test_the_committed_rule_raises_no_false_alarm_and_catches_every_leak(run):
    """Each validation run judged again by growth.check under the committed allowances, as judge() calls it."""
    summary = growth_summary(run)
    assert summary["false_alarms"] == GROWTH_TARGETS["false_alarms"] and summary["clean"] == 20
    assert summary["caught"] == summary["leak"] == 10
    for r in run["runs"]:
        if r["stage"] != "validation":
            continue
        check = growth.check(steps_of(r), r["peaks"], Budget(ram=run["budget"]), run["declared_steps"])
        assert bool(check.breaches) == r["judged"]["failed"] == (r["case"] == "s1 leak"), r["judged"]["message"]
        assert max(s["ram_tree"] for s in r["steps"]) <= run["budget"]  # the peak itself keeps the budget


def test_the_declaring_paragraph_is_the_committed_run():
    assert "steps=10_000" in document(DECLARING)
    declaring_growth()
