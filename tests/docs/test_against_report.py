"""The committed --gpu-budget-against run (benchmarks/results/against.json, RESULTS.md section 5e) meets its targets.

With no change at head, no case of any run failed; a planted +2 % in a
function case and in a command case was failed as a regression in every run;
the wall time of an against run over a plain gate is a ratio of the same
rounds, with an interval; a bisect over 16 commits named the planted commit in
at most 5 gate runs. docs/against.md quotes these figures (its checker runs
here too). A re-run that misses one fails here, so it cannot be committed
without being seen.
"""

import json
from pathlib import Path

import pytest
from doc_checkers import against_measured

from benchmarks.against_base import COMMITS, against_summary

RESULT = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "against.json"


@pytest.fixture(scope="module")
def run() -> dict:
    return json.loads(RESULT.read_text())


def test_the_run_is_complete_with_a_function_and_a_command_case(run):
    from gpu_budget.declare.marks import DEFAULT_TOLERANCE

    assert run["complete"] and run["fraction"] == 0.02
    assert run["tolerance_at_run"] == {"rel": DEFAULT_TOLERANCE.rel, "abs": DEFAULT_TOLERANCE.abs}
    assert sorted(c["kind"] for c in run["cases"].values()) == ["command", "function"]
    assert len(run["clean"]) == len(run["planted"]) == 10


def test_no_change_raised_no_alarm(run):
    s = against_summary(run)
    assert s["false_alarms"] == 0 and s["false_runs"] == 0
    assert all(c["status"] == "pass" for r in run["clean"] for c in r["against"]["cases"].values())


def test_a_planted_2_percent_was_caught_every_time_in_both_cases(run):
    s = against_summary(run)
    assert s["caught"] == {name: 10 for name in run["cases"]}
    assert all(p["exit_code"] == 1 for p in run["planted"])


def test_the_cost_is_a_ratio_of_interleaved_rounds_with_an_interval(run):
    s = against_summary(run)
    assert [r["first"] for r in run["clean"]] == ["plain", "against"] * 5  # the order alternated
    iv = s["ratio"]
    assert iv["n"] == 10 and iv["low"] < iv["geomean"] < iv["high"]


def test_a_bisect_over_16_commits_named_the_planted_commit_in_at_most_5_gate_runs(run):
    assert run["bisect_setup"]["commits"] == COMMITS == 16
    s = against_summary(run)
    assert len(s["bisect"]) == 2
    for b in s["bisect"]:
        assert b["right"] and b["exit_code"] == 0 and b["runs"] <= 5, b


def test_docs_against_md_quotes_the_run():
    assert against_measured()
