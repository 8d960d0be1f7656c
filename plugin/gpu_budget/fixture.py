"""What the `gpu_budget` fixture hands a test: measure() and peak() bound to the running test."""

from __future__ import annotations

from gpu_budget.scenario import Scenario


class BudgetRun:
    def __init__(self, session, item) -> None:
        self._session = session
        self._item = item

    @property
    def scale(self) -> str:
        """The scale this session runs: "tiny" or "real"."""
        return self._session.options.scale

    @property
    def budget(self):
        """This test's Budget at the session's scale and device (ram / vram in bytes, None where not declared)."""
        return self._session.mark_for(self._item).budget

    @property
    def device(self) -> str:
        """Where this test's children train: "cuda" on a host with a GPU, else "cpu" (or the marker's device=).

        Assertions that hold on one device only (mixed precision active, host RAM growing
        with the input) read it; the marker's cpu= / cuda= blocks do the same for budgets."""
        return self._session.mark_for(self._item).device

    def measure(self, scenario: Scenario, label: str | None = None, expect: str | None = None) -> dict:
        """Run `scenario` in a fresh child, judge it, record it; returns the result row.

        A failing verdict fails the test; expect="over-budget" passes only while
        the budget is broken. `label` names one of several measurements in a test.
        """
        return self._session.measure(self._item, scenario, label=label, expect=expect)

    def peak(self, scenario: Scenario) -> dict:
        """Measure `scenario` in a fresh child without judging or recording it: one probe of a search.

        A bisection's probes depend on what earlier probes found, so they are not
        baseline entries; the search's answer is what the test asserts. Returns the
        raw Measurement ("peaks" holds byte counts; "status" "error" for a failed child).
        """
        return self._session.peak(self._item, scenario)

    def note(self, scenario: Scenario, text: str, **data) -> None:
        """Attach a measured finding that is not one case's peak (a bisection's boundary) to the report.

        It goes into the JSON report's "notes" and, through `python -m gpu_budget
        findings`, into FINDINGS.md under the scenario; `data` must be JSON-able.
        """
        self._session.note(self._item, scenario, text, data)
