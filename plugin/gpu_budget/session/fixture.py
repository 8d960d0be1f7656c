"""What the `gpu_budget` fixture hands a test: measure(), peak(), explore() and note(), bound to the running test."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from gpu_budget.declare.scenario import Scenario
from gpu_budget.model.budget import Budget, SizeGiven
from gpu_budget.model.json_value import Json
from gpu_budget.model.result import Measurement, Result
from gpu_budget.search.exploration import Config
from gpu_budget.search.explore import DEFAULT_REAL_RUNS, Envelope, Exploration
from gpu_budget.session.refusal import gate_frames

if TYPE_CHECKING:
    from gpu_budget.session.session import BudgetSession


class BudgetRun:
    """The fixture's object: the session's calls, bound to the test that asked for them."""

    def __init__(self, session: BudgetSession, item: pytest.Item) -> None:
        self._session = session
        self._item = item

    @property
    def scale(self) -> str:
        """The scale this session runs: "tiny" or "real"."""
        return self._session.options.scale

    @property
    def budget(self) -> Budget:
        """This test's Budget at the session's scale and device (ram / vram in bytes, None where not declared)."""
        return self._session.mark_for(self._item).budget

    @property
    def device(self) -> str:
        """Where this test's children train: "cuda" on a host with a GPU, else "cpu" (or the marker's device=).

        Assertions that hold on one device only (mixed precision active, host RAM growing
        with the input) read it; the marker's cpu= / cuda= blocks do the same for budgets."""
        return self._session.mark_for(self._item).device

    def measure(self, scenario: Scenario, label: str | None = None, expect: str | None = None) -> Result:
        """Run `scenario` in a fresh child, judge it, record it; returns its Result (model/result.py).

        A failing verdict fails the test; expect="over-budget" passes only while
        the budget is broken. `label` names one of several measurements in a test.
        """
        __tracebackhide__ = gate_frames  # a refused argument fails at the test's line (refusal.py)
        return self._session.measure(self._item, scenario, label=label, expect=expect)

    def peak(self, scenario: Scenario) -> Measurement:
        """Measure `scenario` in a fresh child without judging or recording it: one probe of a search.

        A bisection's probes depend on what earlier probes found, so they are not
        baseline entries; the search's answer is what the test asserts. Returns the
        Measurement (model/result.py: `peaks` in bytes; `ok` False for a failed child).
        """
        __tracebackhide__ = gate_frames
        return self._session.peak(self._item, scenario)

    def explore(self, scenario: Scenario, envelope: Envelope,
                budget: SizeGiven = None, boundary: str | None = None,
                max_real_runs: int = DEFAULT_REAL_RUNS, seed: int | None = 0,
                estimate: Callable[[Config], int] | None = None) -> Exploration:
        """Explore `scenario`'s knobs over `envelope` with Hypothesis, confirmed by real runs (explore.py).

        Skipped without --gpu-budget-explore. budget: None (the marker's for this
        device and scale; none there: skipped with the reason), a size, or {scale:
        size}. boundary: the knob whose largest value within the budget is found.
        estimate: a prediction of your own (knobs -> bytes) instead of the estimator.
        The exploration is printed at the end and written to the JSON report; a real
        run that fails other than of memory (a bug) stops it and fails the test.
        """
        __tracebackhide__ = gate_frames
        found = self._session.explore(self._item, scenario, envelope, budget=budget, boundary=boundary,
                                      max_real_runs=max_real_runs, seed=seed, estimate=estimate)
        if found.failed:  # a bug, not memory: what it found is kept in the session, but the search did not finish
            pytest.fail(f"exploration stopped: {found.failed}", pytrace=False)
        return found

    def note(self, scenario: Scenario, text: str, **data: Json) -> None:
        """Attach a measured finding that is not one case's peak (a bisection's boundary) to the report.

        It goes into the JSON report's "notes" and, through `python -m gpu_budget
        findings`, into FINDINGS.md under the scenario; `data` must be JSON-able.
        """
        __tracebackhide__ = gate_frames
        self._session.note(self._item, scenario, text, data)
