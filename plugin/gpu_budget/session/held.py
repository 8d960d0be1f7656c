"""A test's baseline entries wait for the test's own outcome: a broken run must not become the baseline.

measure() returns its row while the test goes on (`row = gpu_budget.measure(S)`
then `assert row.info[...]`), so the entry its verdict records is held on the
test's item until the test's reports settle it: withheld at once where the call
failed, its row saying so; else written at the teardown's report where that
passed too (a fixture's check failing at teardown, which pytest reports as the
test's error, breaks the run as the test's own assertion does). An entry
measured outside the call (in a fixture's setup or teardown) is settled there
too, on the call's outcome and the teardown's.

The same report gives each of the test's rows pytest's outcome of it
(`test_outcome`: its row passed the gate, yet the test may fail after
measure() returned it), so the reports count such a test among the failed and
against mode fails it at head (against/verdict.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gpu_budget.judge.store import PendingWrite
from gpu_budget.model.result import RECORDED, Result, written_claim

WITHHELD = "its test did not pass, so no baseline entry was written"  # what a withheld entry's row says
NOT_SHIPPED = "its xdist worker did not finish, so no baseline entry was written"  # ... where no report carried it


@dataclass(frozen=True)
class Held:
    """An entry waiting for its test's outcome, and the row that measured it (to say so where it is withheld)."""

    write: PendingWrite
    row: Result


_HELD = pytest.StashKey[list[Held]]()
_CALL_PASSED = pytest.StashKey[bool]()


@dataclass(frozen=True)
class PytestOutcome:
    """pytest's outcome of a test, in the words of its summary line ("passed", "failed", "error", "skipped", "xfailed",
    "xpassed": a report's outcome alone calls an xfail "skipped", and a failed setup or teardown "failed" where the
    summary says "error"), and where it failed, the first line of pytest's reason."""

    outcome: str
    failure: str | None = None
    after_passed: bool = False  # a teardown that failed after a call that passed: an error of the test all the same

    @classmethod
    def of(cls, report: pytest.TestReport) -> PytestOutcome:
        return cls(outcome_word(report), failure_line(report) if report.failed else None)

    def given(self, row: Result) -> Result:
        """`row` (one of the test's) with this outcome, where it has none yet: an earlier report's stands, but for a
        "passed" that a failing teardown after it overturns (pytest reports the test an error)."""
        if row.test_outcome is not None and not (self.after_passed and row.test_outcome == "passed"):
            return row
        return row.but(test_outcome=self.outcome, test_failure=self.failure)


_OUTCOMES = pytest.StashKey[list[PytestOutcome]]()  # the test's reports' outcomes so far, setup first


def hold(item: pytest.Item, write: PendingWrite, row: Result) -> None:
    """Keep `write` (measured by `row`) on the test's item until its outcome is known."""
    item.stash.setdefault(_HELD, []).append(Held(write, row))


def settle(item: pytest.Item, report: pytest.TestReport) -> tuple[list[Held], list[Held]]:
    """The entries held on the item that this report decides, as (to write, withheld): at the call's report, withheld
    where it failed; at the teardown's, the rest, written where both passed."""
    if report.when == "call":
        item.stash[_CALL_PASSED] = report.passed
        if report.passed:  # its teardown may fail yet
            return [], []
        passed = False
    elif report.when == "teardown":
        passed = item.stash.get(_CALL_PASSED, False) and report.passed
    else:
        return [], []
    held = item.stash.get(_HELD, [])
    if held:
        item.stash[_HELD] = []
    return (held, []) if passed else ([], held)


def restart(item: pytest.Item) -> None:
    """Forget an earlier attempt's entries and outcomes: a rerun of the test (pytest-rerunfailures) is settled on its
    own reports."""
    item.stash[_HELD], item.stash[_CALL_PASSED], item.stash[_OUTCOMES] = [], False, []


def call_passed(item: pytest.Item) -> bool:
    """Whether the test's call phase has reported and passed."""
    return item.stash.get(_CALL_PASSED, False)


def withheld_row(row: Result, why: str = WITHHELD) -> Result:
    """The row of a case whose entry was withheld: its message says no entry was written (`why`), in place of what the
    verdict said it would write (a first run's "recorded", an update's "baseline updated" or "re-recorded"), else
    after it."""
    found = written_claim(row.message)
    if found is not None:
        start, end, claim = found
        said = f"no baseline yet: {why}" if claim == RECORDED else why
        return row.but(message=row.message[:start] + said + row.message[end:])
    return row.but(message=f"{row.message}; {why}" if row.message else why)


def claims_written(row: Result) -> bool:
    """Whether the row's message says its entry is written (recorded, updated or re-recorded)."""
    return written_claim(row.message) is not None


def outcome_of(item: pytest.Item, report: pytest.TestReport) -> PytestOutcome | None:
    """The outcome this report settles for the test's rows not given one yet: at the call's report, the call's; at
    the teardown's (rows measured since the call, or in a setup without a call), the first failed phase's, else the
    first skipped one's, else passed; None at the setup's."""
    seen = item.stash.setdefault(_OUTCOMES, [])
    seen.append(PytestOutcome.of(report))
    if report.when == "call":
        return seen[-1]
    if report.when != "teardown":
        return None
    if report.failed and call_passed(item):
        return PytestOutcome("error", seen[-1].failure, after_passed=True)
    return next((o for kind in ("failed", "error", "skipped", "xfailed", "xpassed") for o in seen if o.outcome == kind),
                PytestOutcome("passed"))


def outcome_word(report: pytest.TestReport) -> str:
    """The report's outcome as pytest's summary counts it: an xfail's report (its `wasxfail`) is "skipped" when the
    test failed as expected, "xfailed", and "passed" when it passed anyway, "xpassed" (a strict one fails); a failed
    setup or teardown is "error" (the report says "failed", pytest's summary and its ERROR line "error")."""
    if report.failed and report.when != "call":
        return "error"
    if hasattr(report, "wasxfail"):
        if report.skipped:
            return "xfailed"
        if report.passed:
            return "xpassed"
    return report.outcome


def failure_line(report: pytest.TestReport) -> str:
    """The first line of why pytest failed the test: its crash's message ("AssertionError: assert 0 == 1"), else its
    report's text."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr or "")
    return next((line.strip() for line in text.splitlines() if line.strip()), "")
