"""A test's reports give pytest's outcome to that test's rows alone, found where measure() put them: no report scans
the session's every row, which made a session's reports grow as the square of its cases (session/own_rows.py)."""

import pytest

from gpu_budget.model.result import Result, Verdict
from gpu_budget.session import own_rows
from gpu_budget.session.session import BudgetSession

OTHERS = 2000  # rows of tests that ran before


class Watched(list):
    """The session's rows, counting the times a report walked all of them."""

    walks = 0

    def __iter__(self):
        Watched.walks += 1
        return super().__iter__()


def row(nodeid: str, label: str | None = None) -> Result:
    return Result(f"{nodeid}::{label}" if label else nodeid, "s", "tiny", Verdict.PASS, True, "within", label=label)


def report(item: pytest.Item, when: str, outcome: str) -> pytest.TestReport:
    """pytest's own report of one phase of `item`, the phase's outcome planted."""
    def phase():
        if outcome == "skipped":
            pytest.skip("not today")
        assert outcome == "passed", "failed after measure()"

    return pytest.TestReport.from_item_and_call(item, pytest.CallInfo.from_call(phase, when=when))


def makereport(session: BudgetSession, item: pytest.Item, rep: pytest.TestReport) -> None:
    """BudgetSession's report wrapper around `rep`, as pluggy drives it."""
    hook = session.pytest_runtest_makereport(item, None)
    next(hook)
    with pytest.raises(StopIteration):
        hook.send(rep)


def test_each_report_changes_only_its_own_tests_rows_and_walks_no_others(pytester):
    pytester.makepyfile(test_one="def test_case(): pass", test_two="def test_case(): pass")
    pytester.makepyfile(test_params="import pytest\n@pytest.mark.parametrize('x', ['a', 'b::c'])\ndef test_p(x): pass")
    items, _ = pytester.inline_genitems()
    by_id = {item.nodeid: item for item in items}
    assert sorted(by_id) == ["test_one.py::test_case", "test_params.py::test_p[a]", "test_params.py::test_p[b::c]",
                             "test_two.py::test_case"]
    session = BudgetSession(pytester.parseconfig())
    session.data.rows = Watched(row(f"test_other.py::test_{i}") for i in range(OTHERS))
    others = list(session.data.rows)
    for nodeid, labels in (("test_one.py::test_case", [None]), ("test_two.py::test_case", ["x", "y"]),
                           ("test_params.py::test_p[a]", [None]), ("test_params.py::test_p[b::c]", ["z"])):
        for label in labels:  # as measure() keeps each row
            measured = row(nodeid, label)
            own_rows.add(by_id[nodeid], session.data.rows, measured)
            own_rows.judged(by_id[nodeid], measured)
    Watched.walks = 0
    outcomes = {"test_one.py::test_case": "failed", "test_two.py::test_case": "passed",
                "test_params.py::test_p[a]": "skipped", "test_params.py::test_p[b::c]": "passed"}
    for nodeid, outcome in outcomes.items():
        for when in ("setup", "call", "teardown"):
            makereport(session, by_id[nodeid], report(by_id[nodeid], when, outcome if when == "call" else "passed"))
    assert Watched.walks == 0
    assert all(a is b for a, b in zip(session.data.rows[:OTHERS], others))  # untouched: no outcome of another test's
    assert [(r.nodeid, r.test_outcome) for r in session.data.rows[OTHERS:]] == [
        ("test_one.py::test_case", "failed"), ("test_two.py::test_case::x", "passed"),
        ("test_two.py::test_case::y", "passed"), ("test_params.py::test_p[a]", "skipped"),
        ("test_params.py::test_p[b::c]::z", "passed")]
    assert session.data.rows[OTHERS].test_failure == "AssertionError: failed after measure()"
    assert [r.test_outcome for r in own_rows.measured(by_id["test_two.py::test_case"])] == ["passed", "passed"]
