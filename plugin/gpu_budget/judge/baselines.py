"""Baseline entries: what one test's stored baseline holds, how one is made from a measurement, found in a file.

Each entry's fingerprint names the imported packages by a digest; the file's
top-level "packages" maps each digest to its package list, so a row can say
which packages differ without every entry repeating sixty of them. The files
themselves (where they live, read, validated, written): files.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpu_budget.declare.scenario import Tolerance
from gpu_budget.judge.files import METRICS
from gpu_budget.measure.meter import phase_peaks
from gpu_budget.results import Measurement

OPTIONAL_METRICS = ("ram_tree", "vram_tree")  # stored only where measured (an entry of before holds neither)


@dataclass(frozen=True)
class Entry:
    """One test's stored baseline: its peaks (bytes, by metric), per phase too, and what it was recorded under.

    Read from a validated file by lookup() and written by entry_from(): JSON
    only at the file's edge (and in an xdist worker's shipment of pending writes).
    """

    peaks: Mapping[str, int | None]
    phases: Mapping[str, dict] = field(default_factory=dict)
    fingerprint: Mapping[str, Any] = field(default_factory=dict)
    recorded: str | None = None
    tolerance: Mapping[str, float] | None = None
    scenario: str | None = None
    fixes: tuple[str, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    ranks: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # a launcher case: rank -> its peaks
    rank_phases: Mapping[str, Mapping[str, Mapping[str, int]]] = field(default_factory=dict)  # rank -> its phases

    @classmethod
    def from_json(cls, data: Mapping) -> Entry:
        return cls(peaks=dict(data["peaks"]), phases=dict(data.get("phases") or {}),
                   fingerprint=dict(data.get("fingerprint") or {}), recorded=data.get("recorded"),
                   tolerance=data.get("tolerance"), scenario=data.get("scenario"), fixes=tuple(data.get("fixes") or ()),
                   params=dict(data.get("params") or {}), ranks=dict(data.get("ranks") or {}),
                   rank_phases=dict(data.get("rank_phases") or {}))

    def to_json(self) -> dict:
        """The JSON of the entry (files sort their keys: a rewrite changes no unchanged entry)."""
        return {"scenario": self.scenario, "fixes": list(self.fixes), "params": dict(self.params),
                "peaks": dict(self.peaks), "phases": dict(self.phases),
                "tolerance": None if self.tolerance is None else dict(self.tolerance),
                "fingerprint": dict(self.fingerprint), "recorded": self.recorded,
                **({"ranks": {k: dict(v) for k, v in self.ranks.items()}} if self.ranks else {}),
                **({"rank_phases": {k: dict(v) for k, v in self.rank_phases.items()}} if self.rank_phases else {})}


def lookup(data: dict, scale: str, test_id: str) -> Entry | None:
    found = data["entries"].get(scale, {}).get(test_id)
    return None if found is None else Entry.from_json(found)


def entry_from(measurement: Measurement, scenario: dict, tolerance: Tolerance, fprint: dict, today: str) -> Entry:
    """The baseline entry for one successful measurement (a launcher case's per rank too, phases included)."""
    return Entry(
        scenario=scenario["name"],
        fixes=tuple(scenario["fixes"]),
        params=scenario["params"],
        peaks={k: measurement.peaks.get(k) for k in METRICS
               if k not in OPTIONAL_METRICS or measurement.peaks.get(k) is not None},
        phases={name: phase_peaks(phase) for name, phase in measurement.phases.items()},
        tolerance={"rel": tolerance.rel, "abs": tolerance.abs},
        fingerprint=fprint,
        recorded=today,
        ranks={str(r["rank"]): dict(r["peaks"]) for r in measurement.ranks},
        rank_phases={str(r["rank"]): {name: phase_peaks(p) for name, p in r["phases"].items()}
                     for r in measurement.ranks},
    )


def packages_of(data: dict, entry: Entry | None) -> dict[str, str] | None:
    """The package list an entry's fingerprint refers to, if the file holds it."""
    digest = entry.fingerprint.get("packages") if entry is not None else None
    return data.get("packages", {}).get(digest) if digest else None
