"""The JSON reports FINDINGS.md is made from, read once into typed records: a Report, its Hardware, its Notes.

A report is the file --gpu-budget-json writes (json_report.py); its rows are
model/result.py Results. Only what the report's pages read is kept here; the
rest of a fingerprint (the CPU, the malloc, the kernels) stays in the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpu_budget.model.json_value import Json, JsonMapping
from gpu_budget.model.result import Result
from gpu_budget.report.json_report import READABLE_VERSIONS


class NotAReport(ValueError):
    """A JSON file that is not a gpu-budget report of a readable version."""


@dataclass(frozen=True)
class Hardware:
    """The hardware fingerprint a report was made under (judge/fingerprint.py), as far as the pages name it."""

    key: str | None = None
    gpu_name: str | None = None
    driver: str | None = None
    cuda: str | None = None
    torch: str | None = None
    transformers: str | None = None
    peft: str | None = None

    @classmethod
    def from_json(cls, data: JsonMapping | None) -> Hardware | None:
        """None for a report that holds no fingerprint (null or empty)."""
        if not data:
            return None
        return cls(data.get("key"), data.get("gpu_name"), data.get("driver"), data.get("cuda"), data.get("torch"),
                   data.get("transformers"), data.get("peft"))

    @property
    def card(self) -> str:
        """The card a GPU row was measured on, with its driver, CUDA and libraries."""
        return (f"{self.gpu_name}, driver {self.driver}, CUDA {self.cuda}; torch {self.torch}, "
                f"transformers {self.transformers}, peft {self.peft}")


@dataclass(frozen=True)
class Note:
    """A test's measured finding that is not one case's peak (gpu_budget.note()): its scenario, scale and text."""

    nodeid: str
    scenario: str
    scale: str
    text: str
    data: JsonMapping = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: JsonMapping) -> Note:
        return cls(data["nodeid"], data["scenario"], data["scale"], data["text"], dict(data.get("data") or {}))


@dataclass(frozen=True)
class Report:
    """One JSON report: its version, the hardware it was made on (None where it holds none), its rows and notes."""

    version: int
    hardware: Hardware | None
    results: tuple[Result, ...]
    notes: tuple[Note, ...] = ()

    @property
    def on_gpu(self) -> bool:
        """Whether it was made on a GPU host (its hardware names the GPU)."""
        return self.hardware is not None and bool(self.hardware.gpu_name)

    @classmethod
    def from_json(cls, data: Json) -> Report:
        """Raises NotAReport for JSON that is no readable report, ValueError (Result.from_json's) for a bad row."""
        if not isinstance(data, Mapping) or data.get("version") not in READABLE_VERSIONS \
                or not isinstance(data.get("results"), list):
            raise NotAReport(f"is not a gpu-budget JSON report (version {' or '.join(map(str, READABLE_VERSIONS))})")
        results = tuple(Result.from_json(r) for r in data["results"])
        return cls(data["version"], Hardware.from_json(data.get("hardware")), results,
                   tuple(Note.from_json(n) for n in data.get("notes") or ()))
