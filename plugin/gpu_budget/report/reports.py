"""The JSON reports FINDINGS.md is made from, read once into typed records: a Report, its Hardware, its Notes.

A report is the file --gpu-budget-json writes (json_report.py); its rows are
model/result.py Results. Only what the report's pages read is kept here; the
rest of a fingerprint (the CPU, the malloc, the kernels) stays in the file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from gpu_budget.declare.marks import DEVICES, ORIGINS
from gpu_budget.model.budget import SCALES
from gpu_budget.model.hardware import Hardware
from gpu_budget.model.json_value import Json
from gpu_budget.model.result import Note, Result
from gpu_budget.report.json_report import READABLE_VERSIONS

T = TypeVar("T")


class NotAReport(ValueError):
    """A JSON file that is not a gpu-budget report of a readable version."""


@dataclass(frozen=True)
class Report:
    """One JSON report: its version, the hardware it was made on (None where it holds none), its rows and notes, and
    the problems its session's gate failed on (an interrupted session's: its rows are those measured before the stop)."""

    version: int
    hardware: Hardware | None
    results: tuple[Result, ...]
    notes: tuple[Note, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def on_gpu(self) -> bool:
        """Whether it was made on a GPU host (its hardware names the GPU)."""
        return self.hardware is not None and bool(self.hardware.gpu_name)

    @classmethod
    def from_json(cls, data: Json) -> Report:
        """Raises NotAReport for JSON that is no readable report, ValueError naming a bad row, hardware or notes."""
        version = data.get("version") if isinstance(data, Mapping) else None
        if isinstance(version, int) and version not in READABLE_VERSIONS and isinstance(data.get("results"), list):
            readable = ", ".join(map(str, READABLE_VERSIONS[:-1])) + f" and {READABLE_VERSIONS[-1]}"
            raise NotAReport(f"is a version-{version} gpu-budget report: this pytest-gpu-budget reads versions "
                             f"{readable} (a report of a later version needs the plugin that wrote it, or later)")
        if isinstance(version, bool) or version not in READABLE_VERSIONS or not isinstance(data.get("results"), list):
            raise NotAReport(f"is not a gpu-budget JSON report (version {' or '.join(map(str, READABLE_VERSIONS))})")
        return cls(data["version"], _part(lambda: Hardware.read(data.get("hardware")), "a malformed 'hardware'"),
                   _part(lambda: tuple(_row(r) for r in data["results"]), "a malformed result row"),
                   _part(lambda: tuple(Note.from_json(n) for n in data.get("notes") or ()), "malformed 'notes'"),
                   _part(lambda: _texts(data.get("gate_problems") or []), "malformed 'gate_problems'"))


def _texts(data: Json) -> tuple[str, ...]:
    """A list of lines of text, as the gate writes its problems."""
    if not isinstance(data, list) or not all(isinstance(text, str) for text in data):
        raise TypeError(f"{data!r:.200} is not a list of text")
    return tuple(data)


def _row(data: Json) -> Result:
    """A row read, its fields the pages key on checked: a node id that is no text, or a scale or device the gate never
    writes, crashed the pages far from here (a TypeError naming nothing), so it is named here."""
    row = Result.from_json(data)
    kinds = {"nodeid": row.nodeid, "scenario": row.scenario, "label": row.label}
    bad = [(key, value) for key, value in kinds.items() if not isinstance(value, str) and (key != "label" or value is not None)]
    bad += [(key, value) for key, value, known in (("scale", row.scale, SCALES), ("device", row.device, (None, *DEVICES)),
                                                   ("budget_origin", row.budget_origin, (None, *ORIGINS)))
            if not isinstance(value, (str, type(None))) or value not in known]
    bad += [("growth", row.growth)] if not isinstance(row.growth, Mapping) else []
    if bad:
        key, value = bad[0]
        raise TypeError(f"{key!r} {value!r} in row {row.nodeid!r}")
    return row


def _part(read: Callable[[], T], what: str) -> T:
    """A part of the report read; a ValueError saying which part where it is not what the gate writes (a file edited
    or made by another tool), never the parser's TypeError from deep inside."""
    try:
        return read()
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"holds {what} ({type(exc).__name__}: {exc})") from None
