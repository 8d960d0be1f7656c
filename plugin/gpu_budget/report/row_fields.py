"""What report/ reads of a Result's JSON-shaped fields, typed once: its growth, its runner's facts.

A Result holds these as the JSON report's row does (mappings by name, see
model/result.py); the tables read them here, as a small record, and use
attributes from then on. Also here: the
metric a set of rows is judged on (the gate's: allocated VRAM where all hold
it, else the process tree's host RAM, else the main process's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpu_budget.model.figures import Peaks
from gpu_budget.model.json_value import JsonMapping
from gpu_budget.model.metric import Metric
from gpu_budget.model.result import Result


def growth_of(row: Result, metric: Metric, fallback: Metric | None = None) -> float | None:
    """The row's growth per step of `metric` (its "<metric>_per_step"); `fallback`'s where the row holds no figure of
    `metric` at all (a report from before it was read)."""
    growth = row.growth
    key = f"{metric}_per_step"
    if fallback is None or key in growth:
        return growth.get(key)
    return growth.get(f"{fallback}_per_step")


def gated_metric(*peaks: Peaks) -> Metric:
    """The gated metric the peaks share: allocated GPU memory, else the process tree's RAM, else the main process's."""
    if all(p.vram_allocated is not None for p in peaks):
        return Metric.VRAM_ALLOCATED
    return Metric.RAM_TREE if all(p.ram_tree is not None for p in peaks) else Metric.RAM


@dataclass(frozen=True)
class FixNotes:
    """What a row's runner said of its fixes: `applied`, {fix: "applied" or why not} (`info["fixes_applied"]`);
    `own`, each fix's note held under the fix's own name (reports from before that contract); `fixes`, the row's."""

    applied: Mapping[str, str]
    own: tuple[tuple[str, str], ...]
    fixes: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, info: JsonMapping, fixes: Sequence[str]) -> FixNotes:
        return cls(dict(info.get("fixes_applied") or {}), tuple((fix, info[fix]) for fix in fixes if isinstance(info.get(fix), str)),
                   tuple(fixes))

    def unapplied(self) -> dict[str, str]:
        """{fix: why} for each of the row's fixes not applied where it ran (the own notes where no fixes_applied was
        reported): a runner's note of a fix the row did not apply ("amp": "not applied: CUDA-only", from a runner
        that reports every fix it knows) says nothing of those it did."""
        if self.applied:
            return {fix: str(note) for fix, note in self.applied.items() if note != "applied" and fix in self.fixes}
        return {fix: note for fix, note in self.own if "not applied" in note}


@dataclass(frozen=True)
class LaunchFacts:
    """What accelerate's ranks reported of themselves: each rank's distributed type, and whether FSDP was asked for."""

    distributed_type: Mapping[str, str]
    fsdp_requested: bool

    @classmethod
    def from_json(cls, info: JsonMapping) -> LaunchFacts:
        return cls(dict(info.get("distributed_type") or {}), bool(info.get("fsdp_requested")))
