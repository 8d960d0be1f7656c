"""The CPU gate's growth case rests on a committed report: benchmarks/results/growth_s5.json (RESULTS.md 5i).

memtests/test_s5_growth.py is the CPU gate's one case judged by growth per
step. Its clean sessions must read well under the clean allowance at every
block size the rule reads (under a sixth of it, as the allowance is six times
the largest growth clean runs read), every one steady and passing; its planted
sessions must read past it and fail, every one. The report must be of the memtest as committed:
its steps, batch and budget.
"""

import json

import pytest
from doc_checkers import GROWTH_S5_RUN, declaring_growth_s5
from doc_figures import ROOT

from benchmarks.growth_s5 import reading, summary
from gpu_budget.judge import compare, growth
from gpu_budget.units import parse_size


@pytest.fixture(scope="module")
def run() -> dict:
    return json.loads((ROOT / GROWTH_S5_RUN).read_text())


def test_the_run_is_complete_with_ten_clean_and_five_planted_sessions(run):
    kinds = [s["kind"] for s in run["sessions"]]
    assert run["complete"] and kinds.count("clean") >= 10 and kinds.count("planted") >= 5, kinds
    assert run["memtest"] == "memtests/test_s5_growth.py" and run["leak_mib"] > 0


def test_the_report_is_of_the_memtest_as_committed(run, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "memtests"))
    monkeypatch.delenv("GPU_BUDGET_PLANT_LEAK_MIB", raising=False)
    from test_s5_generic_oom import TINY_BUDGET
    from test_s5_growth import LONG_RUN, STEPS

    for s in run["sessions"]:
        assert [x["step"] for x in s["steps"]] == list(range(1, STEPS + 1)), s["steps"]
        assert s["projection"]["budget"] == parse_size(TINY_BUDGET) and s["declared_steps"] == 10_000
    assert LONG_RUN.params["keep_hidden_mib"] == 0  # the memtest as CI runs it: no leak


def test_every_clean_session_reads_steady_well_under_the_allowance_and_passes(run):
    """At every block size the rule reads: each reading held to the clean allowance over its block's steps."""
    s = summary(run)
    assert s["allowance"] == growth.RAM_ALLOWANCE
    assert compare.SPREAD_MULTIPLE * max(s["clean"]["ratio"]) <= 1, s["clean"]["ratio"]
    for session in run["sessions"]:
        if session["kind"] == "clean":
            assert session["passed"] and session["exit_code"] == 0 and not reading(session)[1], session["message"]


def test_every_planted_session_reads_past_the_allowance_and_fails(run):
    s = summary(run)
    assert min(s["planted"]["ratio"]) > 1 and min(s["planted"]["low_ends"]) > s["budget"]
    for session in run["sessions"]:
        if session["kind"] == "planted":
            assert not session["passed"] and session["exit_code"] == 1 and reading(session)[2], session["message"]


def test_declaring_quotes_the_report():
    declaring_growth_s5()
