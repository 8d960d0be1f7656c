"""Which estimator builder models which scenario: its runner's "module:function" -> the builder's.

A scenario's folder registers its own builder next to its definition
(`register(S.run, "my_case.estimate:build")`), so the engine names no case study.
Plain strings: registering imports nothing, so a scenario module stays torch-free.
"""

from __future__ import annotations

from gpu_budget.declare.scenario import Scenario, ref_of

BUILDERS: dict[str, str] = {}


def register(run, builder) -> None:
    """Give scenarios whose runner is `run` the estimator builder `builder` (functions or "module:function")."""
    BUILDERS[ref_of(run)] = ref_of(builder)


def builder_for(scenario: Scenario) -> str:
    """The builder registered for the scenario's runner; the error names the scenario and its runner."""
    try:
        return BUILDERS[scenario.run]
    except KeyError:
        raise LookupError(f"no estimator builder for scenario {scenario.name!r} (runner {scenario.run}); register one "
                          "with gpu_budget.estimate.register(run_ref, builder_ref)") from None
