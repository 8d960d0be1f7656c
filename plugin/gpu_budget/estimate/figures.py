"""What the estimator says about a training step: each phase's peak, each optimizer step's, and the Estimate.

Frozen dataclasses, torch-free, so a saved result renders without torch; read
by attribute, written as JSON by to_json.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from gpu_budget.declare.params import Json
from gpu_budget.model.figures import Fields


def step_of(phase: str) -> int:
    """The optimizer step a phase belongs to: 'step3.backward.2' -> 3."""
    return int(phase.removeprefix("step").split(".")[0])


@dataclass(frozen=True)
class PhaseFigure(Fields):
    """One phase's tensor peak, and its split by category (parameters, gradients, ...) at that peak. Bytes."""

    name: str
    peak: int
    at_peak: dict[str, int]


@dataclass(frozen=True)
class StepPeaks(Fields):
    """One optimizer step's peaks: its tensors', and in CUDA mode through the caching allocator (None on a CPU)."""

    step: int
    tensors: int
    allocated: int | None = None
    reserved: int | None = None

    def to_json(self) -> dict[str, int]:
        return self._json(("allocated", "reserved"))

    @classmethod
    def from_json(cls, data: Mapping[str, int]) -> StepPeaks:
        return cls(step=data["step"], tensors=data["tensors"], allocated=data.get("allocated"), reserved=data.get("reserved"))


@dataclass(frozen=True)
class Estimate:
    """Bytes of live tensors predicted for a training step. Always an estimate, never a measurement."""

    scenario: str
    scale: str
    device: str
    metric: str
    step_peak: int
    first_step_peak: int
    steady_peak: int | None
    at_peak: dict[str, int]
    peak_phase: str | None
    built: int
    phases: list[PhaseFigure]
    seconds: float
    steps: int
    cuda_context: int | None = None
    facts: dict[str, Json] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    assumed: dict[str, int] = field(default_factory=dict)
    allocated_peak: int | None = None  # CUDA mode: the steps' allocated and reserved peaks through the caching
    reserved_peak: int | None = None  # allocator's rules (allocator.py); None on a CPU
    per_step: list[StepPeaks] = field(default_factory=list)  # each optimizer step's peaks, in order

    @property
    def device_peak(self) -> int | None:
        """The step's tensor peak plus the CUDA context (when given): not the device figure NVML reads, which holds
        the allocator's reserved memory (and other libraries') beside the context."""
        return None if self.cuda_context is None else self.step_peak + self.cuda_context

    def to_json(self) -> dict[str, Json]:
        return {**asdict(self), "per_step": [s.to_json() for s in self.per_step], "device_peak": self.device_peak,
                "kind": "estimate"}
