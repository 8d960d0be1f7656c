"""A memory-budget test that passed without measuring anything fails: its marker or fixture reads as a gated case.

A measure() call lost in a refactor, or a marker on a test that never asks for
the fixture, would otherwise pass green with no row, and the fail-safe
(judge/failsafe.py) stays quiet while any other test measured. Checked once the
test's teardown is done, so a fixture that measures in its teardown counts.
A budget test pytest failed without a row (it broke before measure()) is
named as a problem of the gate, so the reports do not read as a clean gate.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from gpu_budget.judge import failsafe
from gpu_budget.session import collection, held
from gpu_budget.session.data import SessionData

_ASKED = pytest.StashKey[bool]()  # the test called measure(), peak() or explore()

SAID = ("a memory-budget test (gpu_budget marker or fixture) that measured nothing: call gpu_budget.measure(scenario) "
        "(or peak() in a probe), skip it with the reason, or drop the marker")


def asked(item: pytest.Item) -> None:
    """Note that the item's test asked the gate for a measurement (whatever came of it)."""
    item.stash[_ASKED] = True


def restart(item: pytest.Item) -> None:
    """Forget that an earlier attempt of the test asked: a rerun that measures nothing is still named."""
    item.stash[_ASKED] = False


def problem(item: pytest.Item, budget_test: bool, call_passed: bool) -> str | None:
    """Why the item's test fails though its call passed: a budget test that asked for no measurement; else None."""
    if budget_test and call_passed and not item.stash.get(_ASKED, False):
        return f"{item.nodeid}: {SAID}"
    return None


class UnmeasuredCheck:
    """The plugin that errors a budget test at its teardown where its call passed without asking for a measurement,
    and makes a budget test that failed without a row a problem of the gate (registered with --gpu-budget only:
    without it such tests are skipped)."""

    def __init__(self, data: SessionData, problems: list[str], worker: bool) -> None:
        self.data, self.problems, self.worker = data, problems, worker  # the session's, and whether an xdist worker's
        self.failed: dict[str, str] = {}  # node id -> the first line of why pytest failed it (its first failed phase)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed and not self.worker:  # the controller sees each worker's reports
            self.failed.setdefault(report.nodeid, held.failure_line(report))

    def pytest_sessionfinish(self) -> None:
        """Registered after BudgetSession, so called before its pytest_sessionfinish writes the outputs (and after
        XdistBudget's, tryfirst, has merged every worker's rows)."""
        why = None if self.worker else failsafe.failed_without_rows(self.failed, self.data.order, self.data.rows)
        if why:
            self.problems.append(why)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        yield  # the fixtures' teardowns first: one may measure there
        why = problem(item, collection.is_budget_test(item), held.call_passed(item))
        if why:
            pytest.fail(why, pytrace=False)
