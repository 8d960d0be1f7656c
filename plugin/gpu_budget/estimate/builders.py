"""Which estimator builder models which scenario: its runner's "module:function" -> the builder's; and the check a
builder and its runner share on their batch size.

A scenario's folder registers its own builder next to its definition
(`register(S.run, "my_case.estimate:build")`), so the engine names no case study.
Plain strings: registering imports nothing, so a scenario module stays torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpu_budget.declare.params import Json
from gpu_budget.declare.scenario import Scenario, UndeclaredParam, ref_of

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


class MissingParam(UndeclaredParam):
    """A param a builder read that its scenario does not give: a KeyError whose text names both and what it gives."""


class BuilderParams(dict[str, Json]):
    """The params a builder is handed: reading one the scenario lacks says whose it is, not a bare KeyError."""

    def __init__(self, scenario: Scenario, scale: str) -> None:
        super().__init__(scenario.params_for(scale))
        self._scenario, self._scale = scenario.name, scale

    def __missing__(self, key: str) -> Json:
        raise MissingParam(f"the estimator builder of scenario {self._scenario!r} read param {key!r}, which the "
                           f"scenario does not give at scale {self._scale} (its params there: "
                           f"{', '.join(sorted(self)) or 'none'}); give it in params= or scales=")


def batch_size(params: Mapping[str, Json], least: int = 1, under: str = "", name: str = "batch_size") -> int:
    """params[name], a batch of `least` examples or more (2 where a fix `under` halves it); else ValueError naming
    the param and its value, where a builder would fail on its own terms (a division by zero, an empty reshape)."""
    value = params[name]
    how = f" under {under}, which halves it" if under else ""
    if isinstance(value, bool) or not isinstance(value, int):  # 2.0 is "1 or more": said as what it is not
        raise ValueError(f"{name}={value!r}: a batch holds a whole number of examples, {least} or more{how}")  # noqa: TRY004  a param's bad value, as below
    if value < least:
        raise ValueError(f"{name}={value!r}: a batch holds {least} example{'s' * (least != 1)} or more{how}")
    return value
