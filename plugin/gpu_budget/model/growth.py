"""What a row records of the growth rule's answer (judge/growth.py Check): a projection per metric, or why none.

The rule and its words live in judge/growth.py; this is the record it leaves
in a Result and the JSON report, read back by the report and the benchmarks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpu_budget.model.entry import SPREAD_MULTIPLE
from gpu_budget.units import format_per_step


def allowance_words(allowance: float, runs: int | None) -> str:
    """A growth allowance in a row's words, and where it comes from: the clean runs' (`runs` None), or SPREAD_MULTIPLE
    times the largest growth of the entry's `runs` recorded runs. The verdict's (judge/growth.py) and a plot's."""
    if runs is None:
        return f"the clean allowance {format_per_step(allowance)}"
    return f"its recorded allowance {format_per_step(allowance)} {recorded_basis(runs)}"


def recorded_basis(runs: int) -> str:
    """Where an allowance widened by an entry's `runs` recorded runs comes from, in a row's words."""
    return f"({SPREAD_MULTIPLE}x the largest growth of its {runs} recorded runs)"


ProjectionJson = Mapping[str, str | int | float | bool | list[int] | None]


@dataclass(frozen=True)
class ProjectionRecord:
    """One metric's growth, as judged: the judged steps, their rises, the growth per step (`slope`) with its
    interval and the clean allowance, whether it grows, and its projection to the declared step against the budget."""

    metric: str
    steps_fitted: tuple[int, int]
    rises: tuple[int, ...] | None  # None: a row of a report written before the rule was the median rise
    rule: str | None
    slope: int
    interval: tuple[int, int]
    allowance: int
    grows: bool
    at_step: int
    projected: int
    budget: int | None
    breaks: bool
    allowance_runs: int | None = None  # the allowance is 6x the growth of its entry's N recorded runs (None: the clean one; not written)
    block: int = 1  # steps per block of the reading judged (judge/growth.py: a long run read in blocks; 1 not written)

    def to_json(self) -> dict[str, str | int | bool | list[int] | None]:
        rule = {} if self.rises is None else {"rises": list(self.rises), "rule": self.rule}
        return {"metric": self.metric, "steps_fitted": list(self.steps_fitted), **rule, "slope": self.slope, "interval": list(self.interval), "allowance": self.allowance,
                **({} if self.allowance_runs is None else {"allowance_runs": self.allowance_runs}),
                **({} if self.block == 1 else {"block": self.block}), "grows": self.grows,
                "at_step": self.at_step, "projected": self.projected, "budget": self.budget, "breaks": self.breaks}

    @classmethod
    def from_json(cls, data: ProjectionJson) -> ProjectionRecord:
        first, last = data["steps_fitted"]
        low, high = data["interval"]
        rises = data.get("rises")
        return cls(data["metric"], (first, last), None if rises is None else tuple(rises), data.get("rule"), data["slope"], (low, high),
                   data["allowance"], data["grows"], data["at_step"], data["projected"], data["budget"], data["breaks"],
                   data.get("allowance_runs"), data.get("block", 1))


@dataclass(frozen=True)
class GrowthRecord:
    """The growth rule's answer for one case: the declared run length, a projection per metric measured, or the
    problem that kept it from projecting (too few steps)."""

    steps: int | None
    problem: str | None = None
    projections: tuple[ProjectionRecord, ...] = ()

    def to_json(self) -> dict[str, int | str | list[dict[str, str | int | bool | list[int] | None]] | None]:
        return {"steps": self.steps, "problem": self.problem, "projections": [p.to_json() for p in self.projections]}

    @classmethod
    def from_json(cls, data: Mapping[str, int | str | list[ProjectionJson] | None]) -> GrowthRecord:
        return cls(data.get("steps"), data.get("problem"),
                   tuple(ProjectionRecord.from_json(p) for p in data.get("projections") or ()))
