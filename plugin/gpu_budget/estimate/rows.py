"""The estimate CLI's results: a row per estimated case, or per case validated against a real run, and the file.

Frozen dataclasses, read from a saved --json once (from_json) and written back
(to_json) in the order the file has always had; torch-free, so `--render`
needs no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpu_budget.declare.params import Json
from gpu_budget.estimate.card_room import CardRoom
from gpu_budget.estimate.figures import StepPeaks


@dataclass(frozen=True)
class EstimateRow:
    """One case's estimate as the CLI reports it (bytes, seconds); per_step None in files from before it was kept."""

    label: str
    scenario: str
    fixes: tuple[str, ...]
    scale: str
    metric: str
    estimate: int
    at_peak: dict[str, int]
    estimate_phase: str | None
    estimate_seconds: float
    device_peak: int | None
    notes: tuple[str, ...]
    assumed: dict[str, int]
    facts: dict[str, Json]
    allocated_peak: int | None
    reserved_peak: int | None
    per_step: tuple[StepPeaks, ...] | None = None

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {
            "label": self.label, "scenario": self.scenario, "fixes": list(self.fixes), "scale": self.scale,
            "metric": self.metric, "estimate": self.estimate, "at_peak": self.at_peak,
            "estimate_phase": self.estimate_phase, "estimate_seconds": self.estimate_seconds,
            "device_peak": self.device_peak, "notes": list(self.notes), "assumed": self.assumed, "facts": self.facts,
            "allocated_peak": self.allocated_peak, "reserved_peak": self.reserved_peak}
        if self.per_step is not None:
            out["per_step"] = [s.to_json() for s in self.per_step]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Json]) -> EstimateRow:
        per_step = data.get("per_step")
        return cls(label=data["label"], scenario=data["scenario"], fixes=tuple(data["fixes"]), scale=data["scale"],
                   metric=data["metric"], estimate=data["estimate"], at_peak=data["at_peak"],
                   estimate_phase=data["estimate_phase"], estimate_seconds=data["estimate_seconds"],
                   device_peak=data.get("device_peak"), notes=tuple(data.get("notes") or ()),
                   assumed=data.get("assumed") or {}, facts=data.get("facts") or {},
                   allocated_peak=data.get("allocated_peak"), reserved_peak=data.get("reserved_peak"),
                   per_step=None if per_step is None else tuple(StepPeaks.from_json(s) for s in per_step))


@dataclass(frozen=True)
class ValidationRow:
    """One case estimated and really run: the estimate beside the measured step peak minus the floor (bytes).

    error: estimate minus what the run added over the floor; increment_error: the same for what the steps add
    (estimate minus the estimate at the steps' start, against the measured peak minus the RSS entering them).
    failure: why the real run failed ("oom: ...", "exception: RuntimeError: ..."), None when it passed.
    """

    label: str
    scenario: str
    fixes: tuple[str, ...]
    status: str
    estimate: int
    at_peak: dict[str, int]
    estimate_phase: str | None
    measured_step_peak: int | None
    floor: int | None
    measured_added: int | None
    error: int | None
    estimate_at_step_start: int
    measured_entering_steps: int | None
    increment_error: int | None
    estimate_seconds: float
    real_seconds: float | None
    steps_measured: int
    steps_estimated: int
    notes: tuple[str, ...]
    assumed: dict[str, int]
    failure: str | None = None

    @property
    def estimated_increment(self) -> int:
        """What the estimate says the steps add to what was built before them."""
        return self.estimate - self.estimate_at_step_start

    @property
    def measured_increment(self) -> int | None:
        """What the real steps added to the RSS entering them (None where either was not measured)."""
        if self.measured_entering_steps is None or self.measured_step_peak is None:
            return None
        return self.measured_step_peak - self.measured_entering_steps

    def to_json(self) -> dict[str, Json]:
        return {
            "label": self.label, "scenario": self.scenario, "fixes": list(self.fixes), "status": self.status,
            "estimate": self.estimate, "at_peak": self.at_peak, "estimate_phase": self.estimate_phase,
            "measured_step_peak": self.measured_step_peak, "floor": self.floor, "measured_added": self.measured_added,
            "error": self.error, "estimate_at_step_start": self.estimate_at_step_start,
            "measured_entering_steps": self.measured_entering_steps, "increment_error": self.increment_error,
            "estimate_seconds": self.estimate_seconds, "real_seconds": self.real_seconds,
            "steps_measured": self.steps_measured, "steps_estimated": self.steps_estimated,
            "notes": list(self.notes), "assumed": self.assumed, "failure": self.failure}

    @classmethod
    def from_json(cls, data: Mapping[str, Json]) -> ValidationRow:
        return cls(**{**data, "fixes": tuple(data["fixes"]), "notes": tuple(data["notes"])})


@dataclass(frozen=True)
class Validation:
    """Every case estimated and really run, beside the floor: an empty measured child's peak RSS (bytes).

    not_estimated: label -> why, for each case that could not be estimated (so not run): no row, named under the table.
    """

    floor: int | None
    rows: tuple[ValidationRow, ...]
    scale: str
    threads: int | None
    preload: tuple[str, ...]
    not_estimated: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {"floor": self.floor, "rows": [r.to_json() for r in self.rows], "scale": self.scale,
                                "threads": self.threads, "preload": list(self.preload)}
        return {**out, "not_estimated": self.not_estimated} if self.not_estimated else out

    @classmethod
    def from_json(cls, data: Mapping[str, Json]) -> Validation:
        return cls(floor=data["floor"], rows=tuple(ValidationRow.from_json(r) for r in data["rows"]),
                   scale=data.get("scale", "tiny"), threads=data.get("threads"), preload=tuple(data.get("preload") or ()),
                   not_estimated=dict(data.get("not_estimated") or {}))


@dataclass(frozen=True)
class EstimateOutput:
    """What one run of the CLI found, as its --json file holds it: the estimates, or the validation.

    cases: label -> the case spec it was given. cublas_workspace: CUDA mode's bytes per cuBLAS workspace (None
    on a CPU, where the file leaves it out). card: the room --card leaves, which the estimates are held against.
    not_estimated: label -> why, for each case given that could not be estimated (the validation holds its own).
    """

    scale: str
    device: str
    cases: dict[str, str]
    cublas_workspace: int | None = None
    estimates: tuple[EstimateRow, ...] = ()
    validation: Validation | None = None
    card: CardRoom | None = None
    not_estimated: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {"scale": self.scale, "device": self.device, "kind": "estimate", "cases": self.cases}
        if self.cublas_workspace is not None:
            out["cublas_workspace"] = self.cublas_workspace
        if self.card is not None:
            out["card"] = self.card.to_json()
        if self.validation is not None:
            out.update(self.validation.to_json())
        else:  # benchmarks/gpu_compare.py matches the rows by (scenario, fixes, scale)
            out["estimates"] = [r.to_json() for r in self.estimates]
            if self.not_estimated:
                out["not_estimated"] = self.not_estimated
        return out

    @property
    def left_out(self) -> dict[str, str]:
        """The cases given that could not be estimated, and why: the validation's, or the estimates'."""
        return self.not_estimated if self.validation is None else self.validation.not_estimated

    @classmethod
    def from_json(cls, data: Mapping[str, Json]) -> EstimateOutput:
        validation = Validation.from_json(data) if "rows" in data else None
        return cls(scale=data.get("scale", "tiny"), device=data.get("device", "cpu"), cases=data.get("cases") or {},
                   cublas_workspace=data.get("cublas_workspace"),
                   estimates=tuple(EstimateRow.from_json(r) for r in data.get("estimates") or ()),
                   validation=validation, card=None if data.get("card") is None else CardRoom.from_json(data["card"]),
                   not_estimated={} if validation is not None else dict(data.get("not_estimated") or {}))
