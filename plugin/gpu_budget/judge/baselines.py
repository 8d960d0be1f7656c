"""Baseline entries: what one test's stored baseline holds, how one is made from a measurement, found in a file.

An entry recorded over N fresh runs (--gpu-budget-record-runs=N) holds the
median run's figures and the spread of the gated ones over the N runs
(`Spread`), which the verdict widens its allowance to (compare.py). An entry
without one (every entry recorded before, or over one run) is judged at its
tolerance alone.

Each entry's fingerprint names the imported packages by a digest; the file's
top-level "packages" maps each digest to its package list, so a row can say
which packages differ without every entry repeating sixty of them. The files
themselves (where they live, read, validated, written): files.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu_budget.declare.scenario import Tolerance
from gpu_budget.measure.figures import METRICS, Peaks
from gpu_budget.results import Measurement

SPREAD_METRICS = ("ram", "ram_tree", "ram_tensor", "vram_allocated")  # the gated figures (the tree's and the main's)


@dataclass(frozen=True)
class Spread:
    """How far N fresh runs of a case spread: per gated metric, the largest run's figure less the smallest's (bytes).

    A metric missing from `by_metric` was not measured in every run (a GPU figure on a CPU host)."""

    runs: int
    by_metric: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, runs: Sequence[Peaks]) -> Spread:
        """The spread of the runs' peaks, for each gated metric every run holds."""
        by_metric = {}
        for metric in SPREAD_METRICS:
            values = [p.get(metric) for p in runs]
            if values and all(v is not None for v in values):
                by_metric[metric] = max(values) - min(values)
        return cls(len(runs), by_metric)

    def get(self, metric: str) -> int | None:
        return self.by_metric.get(metric)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Spread:
        return cls(runs=int(data["runs"]), by_metric={str(m): int(v) for m, v in (data.get("by_metric") or {}).items()})

    def to_json(self) -> dict[str, Any]:
        return {"runs": self.runs, "by_metric": dict(self.by_metric)}


def median_run(runs: Sequence[Measurement]) -> Measurement:
    """The run a baseline recorded over several keeps: the median by the gated host-RAM peak (of an even number, the
    upper of the two middle runs), whole, so its phases and ranks agree with its peaks.

    Not the largest: a baseline at the noisiest run's peak hides a regression up to the spread beyond the allowance;
    not the smallest: an ordinary run would then sit a whole spread above it. The median sits inside the range the
    runs covered, and the allowance, a multiple of the spread (compare.SPREAD_MULTIPLE), covers any run of it."""
    ordered = sorted(runs, key=lambda m: m.peaks.gated_ram or 0)
    return ordered[len(ordered) // 2]


@dataclass(frozen=True)
class Entry:
    """One test's stored baseline: its peaks, per phase too, per rank of a launcher case, and what it was recorded
    under.

    Read from a validated file by lookup() and written by entry_from(): JSON
    only at the file's edge (and in an xdist worker's shipment of pending
    writes). A mapping given for a typed field is read as its JSON.
    """

    peaks: Peaks
    phases: Mapping[str, Peaks] = field(default_factory=dict)
    fingerprint: Mapping[str, Any] = field(default_factory=dict)
    recorded: str | None = None
    tolerance: Tolerance | None = None
    scenario: str | None = None
    fixes: tuple[str, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    ranks: Mapping[int, Peaks] = field(default_factory=dict)  # a launcher case: rank -> its peaks
    rank_phases: Mapping[int, Mapping[str, Peaks]] = field(default_factory=dict)  # rank -> its phases
    spread: Spread | None = None  # recorded over several runs: their spread; None: one run (or an older entry)

    def __post_init__(self) -> None:
        def peaks(value: Any) -> Peaks:
            return value if isinstance(value, Peaks) else Peaks.from_json(value)

        tolerance = self.tolerance
        if isinstance(tolerance, Mapping):
            tolerance = Tolerance(rel=tolerance["rel"], abs=tolerance["abs"])
        typed = {"peaks": peaks(self.peaks), "phases": {n: peaks(p) for n, p in self.phases.items()},
                 "tolerance": tolerance, "ranks": {int(r): peaks(p) for r, p in self.ranks.items()},
                 "rank_phases": {int(r): {n: peaks(p) for n, p in by.items()} for r, by in self.rank_phases.items()}}
        spread = self.spread
        typed["spread"] = Spread.from_json(spread) if isinstance(spread, Mapping) else spread
        for name, value in typed.items():
            object.__setattr__(self, name, value)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Entry:
        return cls(peaks=data["peaks"], phases=dict(data.get("phases") or {}),
                   fingerprint=dict(data.get("fingerprint") or {}), recorded=data.get("recorded"),
                   tolerance=data.get("tolerance"), scenario=data.get("scenario"), fixes=tuple(data.get("fixes") or ()),
                   params=dict(data.get("params") or {}), ranks=dict(data.get("ranks") or {}),
                   rank_phases=dict(data.get("rank_phases") or {}), spread=data.get("spread"))

    def to_json(self) -> dict[str, Any]:
        """The JSON of the entry (files sort their keys: a rewrite changes no unchanged entry)."""
        return {"scenario": self.scenario, "fixes": list(self.fixes), "params": dict(self.params),
                "peaks": self.peaks.to_json(METRICS), "phases": {n: p.to_json(METRICS) for n, p in self.phases.items()},
                "tolerance": None if self.tolerance is None else {"rel": self.tolerance.rel, "abs": self.tolerance.abs},
                "fingerprint": dict(self.fingerprint), "recorded": self.recorded,
                **({"ranks": {str(r): p.to_json(METRICS) for r, p in self.ranks.items()}} if self.ranks else {}),
                **({"rank_phases": {str(r): {n: p.to_json(METRICS) for n, p in by.items()}
                                    for r, by in self.rank_phases.items()}} if self.rank_phases else {}),
                **({"spread": self.spread.to_json()} if self.spread is not None else {})}


def lookup(data: Mapping[str, Any], scale: str, test_id: str) -> Entry | None:
    found = data["entries"].get(scale, {}).get(test_id)
    return None if found is None else Entry.from_json(found)


def entry_from(measurement: Measurement, scenario: Mapping[str, Any], tolerance: Tolerance, fprint: Mapping[str, Any],
               today: str, spread: Spread | None = None) -> Entry:
    """The baseline entry for one successful measurement (a launcher case's per rank too, phases included); `spread`:
    that of the runs it was chosen from (median_run), where it was recorded over several."""
    return Entry(
        scenario=scenario["name"],
        fixes=tuple(scenario["fixes"]),
        params=scenario["params"],
        peaks=measurement.peaks,
        phases={name: phase.peaks for name, phase in measurement.phases.items()},
        tolerance=tolerance,
        fingerprint=fprint,
        recorded=today,
        ranks={r.rank: r.peaks for r in measurement.ranks},
        rank_phases={r.rank: {name: p.peaks for name, p in r.phases.items()} for r in measurement.ranks},
        spread=spread,
    )


def packages_of(data: Mapping[str, Any], entry: Entry | None) -> dict[str, str] | None:
    """The package list an entry's fingerprint refers to, if the file holds it."""
    digest = entry.fingerprint.get("packages") if entry is not None else None
    return data.get("packages", {}).get(digest) if digest else None
