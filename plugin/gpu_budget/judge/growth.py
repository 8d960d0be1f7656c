"""A leak is a slope: the peak's growth per step, fitted after warm-up and projected to the real run's length.

A short gate run sees a leak that keeps 1.5 MiB per step as a few percent on
its peak; over a real run of 10,000 steps it is 15 GiB. The marker's `steps=`
gives that length, and this rule projects the measured growth to it, for host
RAM (the gated figure: `ram_tree`, else `ram`) and GPU allocated memory.

Steps left out: the first two (warm-up) and the last. The first allocates the
optimizer state, so every later step peaks above it; the second is where host
RAM's allocator settles (S1's Trainer script: about +1 MiB from step 2 to 3,
flat after). GPU allocated is flat to the byte from step 2 on in the committed
H200 reports, so leaving step 2 out loses nothing there. A Trainer's step phase
also holds the loading of the next step's batch (measure/hf_trainer.py), which
its last step has none of: S1's script's step 8 of 8 peaks about 50 MiB lower.

Fit: the peak so far (a running maximum of the step peaks) over the steps
kept, split into two halves that share the middle step; the growth is the
smaller of the halves' least-squares slopes. A step that peaks lower cannot
pull the fit down; a jump made once (a cache) lies in one half and leaves the
other flat, so it is not growth; a leak grows in both halves. So a run needs 8
steps: 2 of warm-up, 5 fitted, the last.

Allowance: the largest growth clean runs read, per metric (ALLOWANCE says where
each figure comes from). A growth within it is not growth; past it, the
interval is the growth plus or minus the allowance, and the case fails only
when even its low end, projected to the declared step, breaks the budget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_budget.declare.scenario import Budget
from gpu_budget.measure.figures import Step
from gpu_budget.measure.fit import least_squares
from gpu_budget.units import format_size

WARMUP = 2  # optimizer steps left out first: the optimizer state's step, then the allocator's settling step
LAST = 1  # and last: a Trainer's last step loads no next batch
HALF = 3  # points in each half of the fit (they share the middle one): 5 steps fitted at least
FITTED = 2 * HALF - 1
MiB = 2**20

# The clean allowance, bytes per step: the most growth the fit reads in runs with no leak.
# Host RAM: the largest growth of the calibration runs in benchmarks/results/growth.json (10 clean runs each of
# S1's Trainer script and S5, 8 steps; tests/docs/test_growth_report.py re-derives it).
# GPU allocated: the largest rise of a steady step's peak over the one before in the clean cases of
# benchmarks/results/gpu-h200-tiny-2.report.json (S1's worker cases, 20 KiB; every other case flat to the byte;
# S2 left out: its batches change shape by design). A least-squares slope of a rising series is a weighted mean of
# its rises, so no clean series reads more than that.
RAM_ALLOWANCE = 524_288  # 0.5 MiB/step: benchmarks/RESULTS.md, section 5c
ALLOWANCE = {"ram": RAM_ALLOWANCE, "ram_tree": RAM_ALLOWANCE, "vram_allocated": 20_480}
LABELS = {"ram": "host RAM (main process)", "ram_tree": "host RAM", "vram_allocated": "GPU allocated"}


@dataclass(frozen=True)
class Series:
    """One metric's peak per optimizer step, in the order run (the rule's input)."""

    metric: str
    steps: tuple[int, ...]
    peaks: tuple[int, ...]

    @classmethod
    def of(cls, records: Sequence[Step], metric: str) -> Series | None:
        """The metric's series from a Measurement's step records; None where any step lacks it."""
        peaks = [r.get(metric) for r in records]
        if not peaks or any(p is None for p in peaks):
            return None
        return cls(metric, tuple(r.step for r in records), tuple(int(p) for p in peaks))


@dataclass(frozen=True)
class Growth:
    """The fit of one series: growth per step (bytes, the smaller half's slope) over steps first..last."""

    metric: str
    first: int
    last: int
    slope: float
    halves: tuple[float, float]
    allowance: float
    peak: int  # the peak so far at the last step fitted: where the projection starts

    @property
    def grows(self) -> bool:
        """Past the clean allowance: a slope within it is noise, not growth."""
        return self.slope > self.allowance

    @property
    def interval(self) -> tuple[float, float]:
        return max(0.0, self.slope - self.allowance), self.slope + self.allowance


def fit(series: Series, allowance: float) -> Growth | None:
    """The growth of a series between warm-up and its last step; None with fewer than FITTED steps there."""
    steps, peaks = series.steps[WARMUP:-LAST], series.peaks[WARMUP:-LAST]
    if len(steps) < FITTED:
        return None
    envelope = [max(peaks[: i + 1]) for i in range(len(peaks))]
    middle = len(steps) // 2
    halves = [(steps[: middle + 1], envelope[: middle + 1]), (steps[middle:], envelope[middle:])]
    slopes = tuple(least_squares(xs, ys)[0] for xs, ys in halves)
    return Growth(series.metric, steps[0], steps[-1], max(0.0, min(slopes)), slopes, allowance, envelope[-1])


@dataclass(frozen=True)
class Projection:
    """One metric's growth projected to the declared step, against its budget (None: no budget for it)."""

    growth: Growth
    at_step: int
    budget: int | None
    floor: int  # the run's measured peak of the metric: a projection never reads below what was measured

    def at(self, slope: float) -> int:
        return max(self.floor, round(self.growth.peak + slope * max(0, self.at_step - self.growth.last)))

    @property
    def projected(self) -> int:
        return self.at(self.growth.slope) if self.growth.grows else self.floor

    @property
    def breaks(self) -> bool:
        """Even the interval's low end breaks the budget at the declared step."""
        return self.growth.grows and self.budget is not None and self.at(self.growth.interval[0]) > self.budget

    def describe(self) -> str:
        g = self.growth
        what, over = LABELS[g.metric], f"over steps {g.first}-{g.last}"
        if not g.grows:
            return (f"{what} steady {over} ({_per_step(g.slope)}, within the clean allowance "
                    f"{_per_step(g.allowance)})")
        low, high = g.interval
        text = (f"{what} grows {_per_step(g.slope)} {over} ({_per_step(low, '')} .. {_per_step(high)} with the "
                f"clean allowance): about {format_size(self.projected)} at step {self.at_step:,}")
        if self.budget is None:
            return text + " (no budget to compare)"
        return text + (f" > budget {format_size(self.budget)}" if self.breaks else
                       f", within budget {format_size(self.budget)}")

    def to_json(self) -> dict[str, Any]:
        g = self.growth
        return {"metric": g.metric, "steps_fitted": [g.first, g.last], "slope": round(g.slope),
                "interval": [round(v) for v in g.interval], "allowance": round(g.allowance), "grows": g.grows,
                "at_step": self.at_step, "projected": self.projected, "budget": self.budget, "breaks": self.breaks}


@dataclass(frozen=True)
class Check:
    """The growth rule's answer for one case: a projection per metric measured, or why none could be made."""

    steps: int | None  # the declared run length (None: none declared, nothing checked)
    projections: tuple[Projection, ...] = ()
    problem: str | None = None

    @property
    def breaches(self) -> list[str]:
        return [p.describe() for p in self.projections if p.breaks]

    @property
    def notes(self) -> list[str]:
        return [p.describe() for p in self.projections if not p.breaks]

    def to_json(self) -> dict[str, Any]:
        return {"steps": self.steps, "problem": self.problem, "projections": [p.to_json() for p in self.projections]}


def check(records: Sequence[Mapping[str, Any]], peaks: Mapping[str, int | None], budget: Budget, steps: int | None,
          allowance: Mapping[str, float] = ALLOWANCE) -> Check:
    """Project a case's growth to `steps` (None: no run length declared, an empty Check).

    records: the Measurement's step records; peaks: its peaks (the floor of each
    projection). Host RAM is the gated figure (ram_tree where every step has it).
    """
    if steps is None:
        return Check(None)
    ram = Series.of(records, "ram_tree") or Series.of(records, "ram")
    budgets = {"ram": budget.ram, "ram_tree": budget.ram, "vram_allocated": budget.vram}
    projections = []
    for series in (ram, Series.of(records, "vram_allocated")):
        growth = fit(series, allowance[series.metric]) if series else None
        if growth is not None:
            floor = max(peaks.get(series.metric) or 0, *series.peaks)
            projections.append(Projection(growth, steps, budgets[series.metric], floor))
    if not projections:
        return Check(steps, problem=(
            f"steps={steps:,} declared, but the run measured {len(records)} optimizer step(s): projecting its growth "
            f"needs at least {WARMUP + FITTED + LAST} (the first {WARMUP} are warm-up, then {FITTED} fitted, and the "
            "last is left out); run more steps at this scale, or declare steps= only for the scales that run them "
            "({'real': ...})"))
    return Check(steps, tuple(projections))


def _per_step(nbytes: float, unit: str = " MiB/step") -> str:
    return f"{nbytes / MiB:.2f}{unit}"
