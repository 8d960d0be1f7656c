"""What an exploration found (explore.py): frozen records the search fills in, and the report lines they make.

A knob's value is an integer of a range or one of a listed sequence; a
configuration maps each knob to one. JSON only in to_json / from_json: an
exploration crosses from an xdist worker, and into the JSON report, as JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from gpu_budget.model.figures import Fields
from gpu_budget.model.json_value import Json, JsonMapping
from gpu_budget.units import format_mib, format_size

Knob = int | float | str  # one value of a knob
Config = Mapping[str, Knob]  # one point of the envelope: knob -> value


@dataclass(frozen=True)
class Probe(Fields):
    """One configuration the search singled out (the worst case, the smallest failing one): its calibrated
    prediction, and a real run's peak once confirmed (None until then, or a run that died of memory)."""

    config: Config
    predicted: int
    measured: int | None = None

    def to_json(self) -> dict[str, Json]:
        return {"config": dict(self.config), "predicted": self.predicted, "measured": self.measured}

    @classmethod
    def from_json(cls, data: JsonMapping) -> Probe:
        return cls(**data)


@dataclass(frozen=True)
class Boundary(Fields):
    """The largest value of one knob within the budget, the others at `at`: predicted, then confirmed by real runs
    (`peaks`: value -> measured peak). complete=False: the real-run cap cut the search short."""

    knob: str
    at: Config
    value: Knob | None = None
    predicted_value: Knob | None = None
    peaks: Mapping[Knob, int | None] = field(default_factory=dict)
    complete: bool = False

    def to_json(self) -> dict[str, Json]:
        """The peaks as [value, peak] pairs: a knob's values need not be strings."""
        return {"knob": self.knob, "at": dict(self.at), "value": self.value, "predicted_value": self.predicted_value,
                "peaks": [[v, p] for v, p in self.peaks.items()], "complete": self.complete}

    @classmethod
    def from_json(cls, data: JsonMapping) -> Boundary:
        return cls(**{**data, "peaks": {v: p for v, p in data["peaks"]}})


@dataclass(frozen=True)
class Calibration(Fields):
    """measured ~ slope * estimate + intercept, fitted to every real run. refused_slope / _intercept: the fitted line
    where it did not rise, so was not used (slope 1 and the largest offset seen instead); None where it was."""

    slope: float
    intercept: int
    points: int
    refused_slope: float | None = None
    refused_intercept: int | None = None

    def to_json(self) -> dict[str, Json]:
        refused = {} if self.refused_slope is None else {"refused_slope": self.refused_slope,
                                                         "refused_intercept": self.refused_intercept}
        return {"slope": self.slope, "intercept": self.intercept, "points": self.points, **refused}

    def text(self) -> str:
        """The report's line: the one used, and, where the fitted line fell, that line and why it was not."""
        used = _line(self.slope, self.intercept)
        if self.refused_slope is None:
            return f"calibration over {self.points} real runs: {used}"
        return (f"calibration over {self.points} real runs: the fitted line falls "
                f"({_line(self.refused_slope, self.refused_intercept or 0)}), no model of memory: the largest offset "
                f"seen instead, {used}")

    @classmethod
    def from_json(cls, data: JsonMapping) -> Calibration:
        return cls(**data)


@dataclass(frozen=True)
class NotMonotone(Fields):
    """A step up of a monotone knob that predicts less (by `drop` bytes): the estimate, or the knob, is suspect."""

    knob: str
    config: Config
    up: Knob
    drop: int

    def to_json(self) -> dict[str, Json]:
        return {"knob": self.knob, "config": dict(self.config), "up": self.up, "drop": self.drop}

    @classmethod
    def from_json(cls, data: JsonMapping) -> NotMonotone:
        return cls(**data)


@dataclass(frozen=True)
class RealRun(Fields):
    """One real run of the search: its configuration, its peak (None: it died of memory), its time; `failed`: how it
    failed other than of memory (the search stopped there), its peak then the highest seen before it failed."""

    config: Config
    peak: int | None
    seconds: float
    failed: str | None = None

    def to_json(self) -> dict[str, Json]:
        return {"config": dict(self.config), "peak": self.peak, "seconds": self.seconds,
                **({"failed": self.failed} if self.failed else {})}

    def text(self) -> str:
        """Its peak, a death of memory, or how it failed and the peak it had reached."""
        if self.failed is None:
            return peak_text(self.peak)
        return self.failed + ("" if self.peak is None else f", {format_mib(self.peak)} seen")

    @classmethod
    def from_json(cls, data: JsonMapping) -> RealRun:
        return cls(**data)


@dataclass
class Exploration:
    """What an exploration found. Bytes; `predicted` = estimate + offset, `measured` = a real run's peak.

    Filled as the search goes (so a search cut short by the real-run cap still
    reports what it found); its parts are frozen records.
    """

    scenario: str
    budget: int
    metric: str
    envelope: Mapping[str, Mapping[str, list[Knob]]]  # knob -> {"range": [lo, hi]} | {"values": [...]} (Envelope.described)
    worst: Probe | None = None
    boundary: Boundary | None = None
    smallest_failing: Probe | None = None
    monotonicity: list[NotMonotone] = field(default_factory=list)
    offset: int | None = None  # measured - estimate at the calibration run
    calibration: Calibration | None = None
    real_runs: list[RealRun] = field(default_factory=list)
    estimates: int = 0
    examples: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    card: str | None = None  # the card the budget stands for (its label): real runs ran under its cap
    verified: bool = True  # False: no real run could measure the metric here; every figure is the estimate's
    boundary_error: int | None = None  # measured - estimate (uncalibrated) at the boundary's value
    failed: str | None = None  # the real run that failed other than of memory: the search stopped there
    close_calls: list[str] = field(default_factory=list)  # on the estimate alone: edges inside its error of the budget

    def to_json(self) -> dict[str, Json]:
        return {"scenario": self.scenario, "budget": self.budget, "metric": self.metric,
                "envelope": {k: _spec_written(spec) for k, spec in self.envelope.items()},
                "worst": _written(self.worst),
                "boundary": _written(self.boundary), "smallest_failing": _written(self.smallest_failing),
                "monotonicity": [v.to_json() for v in self.monotonicity], "offset": self.offset,
                "calibration": _written(self.calibration), "real_runs": [r.to_json() for r in self.real_runs],
                "estimates": self.estimates, "examples": self.examples, "seconds": self.seconds,
                "problems": list(self.problems), "card": self.card, "verified": self.verified,
                "boundary_error": self.boundary_error, **({"failed": self.failed} if self.failed else {}),
                **({"close_calls": list(self.close_calls)} if self.close_calls else {})}

    @classmethod
    def from_json(cls, data: JsonMapping) -> Exploration:
        return cls(data["scenario"], data["budget"], data["metric"],
                   {k: _spec_read(spec) for k, spec in data["envelope"].items()},
                   _read(Probe.from_json, data.get("worst")), _read(Boundary.from_json, data.get("boundary")),
                   _read(Probe.from_json, data.get("smallest_failing")),
                   [NotMonotone.from_json(v) for v in data.get("monotonicity") or ()], data.get("offset"),
                   _read(Calibration.from_json, data.get("calibration")),
                   [RealRun.from_json(r) for r in data.get("real_runs") or ()], data.get("estimates", 0),
                   data.get("examples", 0), data.get("seconds", 0.0), list(data.get("problems") or ()),
                   data.get("card"), data.get("verified", True), data.get("boundary_error"), data.get("failed"),
                   list(data.get("close_calls") or ()))

    def _measured(self, probe: Probe) -> str:
        """A probe's real run: its peak and side of the budget, a death of memory (over), or that none measured it."""
        if probe.measured is not None:
            side = "over budget" if probe.measured > self.budget else "within budget"
            return f"measured {peak_beside(probe.measured, self.budget)}, {side}"
        ran = [r for r in self.real_runs if r.config == probe.config]
        if any(r.failed for r in ran):
            return "measured nothing: the run failed"
        return "measured nothing: the run died of memory, over budget" if ran else "not measured"

    def _boundary_lines(self, b: Boundary) -> list[str]:
        """The boundary's value (said to be the envelope's top where it is: the search stopped there, the budget
        did not), its real runs, and the estimate's error there."""
        at = f" at {config_text(b.at)}" if b.at else ""
        value = ("none" if b.value is None else b.value) if b.complete else "not settled"
        found = ("none" if b.predicted_value is None else b.predicted_value) if not self.verified else value
        top = f", the envelope's top: the budget is not reached along {b.knob}" if found == _top(self.envelope[b.knob]) else ""
        runs = ", ".join(f"{k}: {peak_beside(v, self.budget)}" for k, v in sorted(b.peaks.items()))
        if not self.verified:
            lines = [f"largest {b.knob}{at} within {format_mib(self.budget)}, estimated: {found}{top}"]
        else:
            predicted = "none" if b.predicted_value is None else b.predicted_value
            lines = [(f"largest {b.knob}{at} within {format_mib(self.budget)}: {value}{top} "
                      f"(predicted {predicted}" + (f"; real runs {runs})" if runs else ")"))]
        if self.boundary_error is not None:
            lines.append(f"the estimate's error at the boundary ({b.knob}={b.value}): "
                         f"{format_mib(self.boundary_error)} (measured - estimate)")
        return lines

    def summary(self) -> list[str]:
        """Report lines: the worst case, the boundary, the smallest failing configuration, the cost."""
        lines = [(f"{self.scenario}: {self.examples} Hypothesis examples on {self.estimates} estimates, "
                 f"{len(self.real_runs)} real runs, {self.seconds:.0f} s; budget {format_mib(self.budget)} "
                 f"({self.metric}); offset (real - estimate at calibration) {format_mib(self.offset)}")]
        if self.card:
            lines.append(f"within {self.card}: " + ("real runs under its cap" if self.verified else
                                                     "estimated only (no GPU here: nothing is verified)"))
        if self.worst:
            lines.append(f"worst case {config_text(self.worst.config)}: {self._measured(self.worst)} "
                         f"(predicted {format_mib(self.worst.predicted)})")
        if self.boundary:
            lines += self._boundary_lines(self.boundary)
        if self.smallest_failing:
            s = self.smallest_failing
            lines.append(f"smallest configuration predicted over budget (shrunk): {config_text(s.config)}: "
                         f"{self._measured(s)} (predicted {format_mib(s.predicted)})")
        lines += [f"on the estimate alone: {c}" for c in self.close_calls]
        if self.calibration and not self.calibration.points:  # its line is the identity no run measured
            lines.append("calibration: none, no real run measured a peak: every prediction is the estimate alone")
        elif self.calibration:
            lines.append(self.calibration.text())
        runs = "; ".join(f"{config_text(r.config)}: {r.text()}" for r in self.real_runs)
        lines.append(f"real runs: {runs}")
        for v in self.monotonicity:
            lines.append(f"not monotone in {v.knob}: {config_text(v.config)} -> {v.knob}={v.up} "
                         f"predicts {format_mib(v.drop)} less")
        lines += [f"problem: {p}" for p in self.problems]
        return lines


def _spec_read(spec: JsonMapping | list[Knob]) -> dict[str, list[Knob]]:
    """A knob of a report's envelope; an older report's bare list (a range's [lo, hi], or the values: it did not say
    which) is kept as {"listed": [...]}, never guessed."""
    return {how: list(v) for how, v in spec.items()} if isinstance(spec, Mapping) else {"listed": list(spec)}


def _spec_written(spec: Mapping[str, list[Knob]]) -> dict[str, list[Knob]] | list[Knob]:
    """A knob as the report writes it; one read from an older report ("listed") as it was written there."""
    ((how, values),) = spec.items()
    return list(values) if how == "listed" else {how: list(values)}


def _top(spec: Mapping[str, list[Knob]]) -> Knob:
    """A knob's last value: a range's hi, the largest listed."""
    (values,) = spec.values()
    return max(values)


def _line(slope: float, intercept: int) -> str:
    sign = "-" if intercept < 0 else "+"  # "+ -79.7 MiB" read as a typo
    return f"measured = {slope:.3f} x estimate {sign} {format_mib(abs(intercept))}"


def peak_text(peak: int | None) -> str:
    """A real run's peak; None is a run that died of memory (a crash stops the search, so it never lands here)."""
    return "died of memory" if peak is None else format_mib(peak)


def peak_beside(peak: int | None, budget: int) -> str:
    """A real run's peak, with how far it is over or under the budget where, to 0.1 MiB, it reads as the budget's
    own figure: along a fine knob (a sequence length) the runs either side of the boundary often do."""
    said = peak_text(peak)
    if peak is None or peak == budget or said != format_mib(budget):
        return said
    return f"{said} ({format_size(abs(peak - budget))} {'over' if peak > budget else 'under'} the budget)"


def config_text(config: Config) -> str:
    """knob=value, ... as a report line names a configuration."""
    return ", ".join(f"{k}={v}" for k, v in config.items())


def _written(record: Probe | Boundary | Calibration | None) -> dict[str, Json] | None:
    return None if record is None else record.to_json()


R = TypeVar("R")


def _read(from_json: Callable[[JsonMapping], R], data: JsonMapping | None) -> R | None:
    return None if data is None else from_json(data)
