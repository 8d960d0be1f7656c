"""What the `gpu_budget` fixture hands a test: measure() bound to the running test."""

from __future__ import annotations

from gpu_budget.scenario import Scenario


class BudgetRun:
    def __init__(self, session, item) -> None:
        self._session = session
        self._item = item

    def measure(self, scenario: Scenario, label: str | None = None, expect: str | None = None) -> dict:
        """Run `scenario` in a fresh child, judge it, record it; returns the result row.

        A failing verdict fails the test; expect="over-budget" passes only while
        the budget is broken. `label` names one of several measurements in a test.
        """
        return self._session.measure(self._item, scenario, label=label, expect=expect)
