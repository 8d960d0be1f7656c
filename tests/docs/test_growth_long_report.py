"""The growth rule over long runs rests on a committed report: benchmarks/results/growth_long.json.

A block of L judged steps is allowed the steps' own allowance over L per step
(judge/growth.py); the clean runs of the report, read at every block size by the
committed rule, must stay under a sixth of it, as the steps' own allowance is six
times the largest growth 10-step clean runs read. Every case at the report's
longest run length, judged again here from its measured steps, must get the
verdict it expects in every session, and the sessions run at the rule's commit
must show the gate itself giving it.
"""

import json

import pytest
from doc_checkers import declaring_growth_long
from doc_figures import ROOT, document

from benchmarks.growth_long import CLEAN, EXPECTED, RULE_COMMITS, calibration, summary
from gpu_budget.judge import compare, growth

RUN = "benchmarks/results/growth_long.json"


@pytest.fixture(scope="module")
def run() -> dict:
    return json.loads((ROOT / RUN).read_text())


def test_the_run_is_complete_over_three_lengths_with_every_case(run):
    lengths = sorted({s["steps"] for s in run["sessions"]})
    assert run["complete"] and lengths == [40, 80, 200] and run["declared_steps"] == 10_000
    for s in run["sessions"]:
        assert sorted(r["case"] for r in s["rows"]) == sorted(EXPECTED), s["rows"]
        assert all(r["verdict"] in ("pass", "no-baseline", "over-budget") for r in s["rows"]), s["rows"]
        assert all(len(r["steps"]) == s["steps"] for r in s["rows"]), s["steps"]


def test_every_block_size_s_allowance_holds_six_times_the_clean_runs_largest_growth(run):
    cal = calibration(run)
    assert list(cal) == [1, 2, 4, 8, 16]
    for size, c in cal.items():
        assert c["allowance"] == growth.RAM_ALLOWANCE / size
        assert compare.SPREAD_MULTIPLE * c["largest"] <= c["allowance"], (size, c)
    assert cal[16]["runs"] >= 4 * len(CLEAN)


def test_every_case_at_the_longest_length_gets_its_verdict_in_every_session(run):
    longest = max(s["steps"] for s in run["sessions"])
    for (case, steps), c in summary(run).items():
        if steps == longest:
            assert c["verdicts"] == [EXPECTED[case]] * c["sessions"], (case, c)


def test_the_sessions_at_the_rule_s_commit_show_the_gate_failing_what_the_rule_fails(run):
    assert RULE_COMMITS and {s.get("commit") for s in run["sessions"]} >= set(RULE_COMMITS)
    for (case, steps), c in summary(run).items():
        if c["gate_sessions"]:
            assert c["gate_failed"] == c["verdicts"][-c["gate_sessions"]:].count("fail"), (case, steps, c)
    longest = max(s["steps"] for s in run["sessions"])
    judged = [c for (case, steps), c in summary(run).items() if steps == longest and c["gate_sessions"]]
    assert judged and sum(c["gate_failed"] for c in judged) > 0


def test_declaring_quotes_the_report():
    assert "steps=10_000" in document("docs/declaring.md")
    declaring_growth_long()
