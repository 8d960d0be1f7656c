"""What an interrupted session's reports say they hold (judge/failsafe.interrupted)."""

from gpu_budget.judge.failsafe import interrupted
from gpu_budget.model.result import Result, Verdict


def _row(nodeid: str, label: str | None = None) -> Result:
    return Result(nodeid=nodeid + (f"::{label}" if label else ""), scenario="s", scale="tiny", verdict=Verdict.PASS,
                  passed=True, message="", label=label)


def test_it_counts_tests_not_cases_and_says_the_selection_where_known():
    rows = [_row("t.py::test_a", "before"), _row("t.py::test_a", "after"), _row("t.py::test_b")]
    assert interrupted(5, rows).startswith("the session was interrupted (Ctrl-C, SIGTERM) after 2 of 5 selected "
                                           "memory-budget tests reported: ")
    # an xdist controller none of whose workers finished knows no selection: the count alone
    assert " after 2 selected memory-budget tests reported" in interrupted(0, rows)
    assert " after 0 of 1 selected memory-budget test reported" in interrupted(1, [])
