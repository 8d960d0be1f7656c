"""What the `gpu_budget` fixture hands a test: measure() and peak() bound to the running test."""

from __future__ import annotations

import pytest

from gpu_budget import isolate
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

    def peak(self, scenario: Scenario) -> dict:
        """Measure `scenario` in a fresh child without judging or recording it: one probe of a search.

        A bisection's probes depend on what earlier probes found, so they are not
        baseline entries; the search's answer is what the test asserts. Returns the
        raw Measurement ("peaks" holds byte counts; "status" "error" for a failed child).
        """
        session, opts = self._session, self._session.options
        if not opts.enabled:
            pytest.skip("memory-budget test: run with --gpu-budget")
        reason = session._skip_reason(scenario, session.mark_for(self._item), opts.scale)
        if reason:
            pytest.skip(reason)
        job = scenario.to_json(opts.scale)
        assets = session._assets / scenario.asset_key(opts.scale)
        if scenario.prepare:
            isolate.prepare_assets(job, assets, opts.timeout, opts.threads, opts.preload)
        return isolate.measure(job, assets, opts.timeout, opts.threads, opts.preload)
