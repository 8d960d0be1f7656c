"""One test's stored baseline (`Entry`) and the spread of the runs it was recorded over (`Spread`).

A spread widens what the verdict allows a case to SPREAD_MULTIPLE times it:
its peaks' change (judge/compare.py) and its growth per step (judge/growth.py).

JSON only at a baseline file's edge (judge/files.py) and in an xdist
worker's shipment of pending writes, through to_json / from_json.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpu_budget.model.budget import Tolerance
from gpu_budget.model.figures import Peaks
from gpu_budget.model.json_value import JsonMapping, JsonObject
from gpu_budget.model.metric import ALL, SPREAD
from gpu_budget.model.setup import Fingerprint

SPREAD_MULTIPLE = 6  # a stored spread widens an allowance to 6x it: the default tolerances' own rule (RESULTS.md, 4)


@dataclass(frozen=True)
class Spread:
    """How far N fresh runs of a case spread: per gated metric, the largest run's figure less the smallest's (bytes).

    A metric missing from `by_metric` was not measured in every run (a GPU figure on a CPU host). `growth`: per
    metric the growth rule reads (JUDGED_GROWTH), the largest growth per step it read in any of the runs (bytes per
    step); empty where a run was too short to read one (judge/growth.py largest). `blocks`: per metric read in blocks
    of steps too, per block size (judged marks, 2 or more), the largest growth per step the runs read in blocks of
    that size (judge/growth.py largest_blocks): a long run's noise step by step is not its noise over blocks.
    `ranks`: a launch's, rank -> the spread of that rank's own figures and steps over the runs (the row's are its
    worst rank's): each rank's growth is held to what its own runs read (of_rank)."""

    runs: int
    by_metric: Mapping[str, int] = field(default_factory=dict)
    growth: Mapping[str, int] = field(default_factory=dict)
    blocks: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    ranks: Mapping[int, Spread] = field(default_factory=dict)

    @classmethod
    def of(cls, runs: Sequence[Peaks], growth: Mapping[str, int] | None = None,
           blocks: Mapping[str, Mapping[int, int]] | None = None) -> Spread:
        """The spread of the runs' peaks, for each gated metric every run holds, and their largest growth."""
        by_metric = {}
        for one in SPREAD:
            values = [p.figure(one) for p in runs]
            if values and all(v is not None for v in values):
                by_metric[one] = max(values) - min(values)
        return cls(len(runs), by_metric, dict(growth or {}), {m: dict(by) for m, by in (blocks or {}).items() if by})

    def of_rank(self, rank: int) -> Spread:
        """The spread a launch's rank is held to: its own runs', else (an entry recorded before ranks kept their own,
        or a rank the runs did not all hold) the row's."""
        return self.ranks.get(rank, self)

    def get(self, metric: str) -> int | None:
        return self.by_metric.get(metric)

    def growth_at(self, metric: str, scale: int) -> int | None:
        """The largest growth per step the runs read of `metric` in blocks of `scale` judged marks (1: step by step);
        None where they read none at that size (runs too short for it, or recorded before block sizes were kept)."""
        return self.growth.get(metric) if scale == 1 else self.blocks.get(metric, {}).get(scale)

    @classmethod
    def from_json(cls, data: JsonMapping) -> Spread:
        return cls(runs=int(data["runs"]), by_metric={str(m): int(v) for m, v in (data.get("by_metric") or {}).items()},
                   growth={str(m): int(v) for m, v in (data.get("growth") or {}).items()},
                   blocks={str(m): {int(size): int(v) for size, v in by.items()}
                           for m, by in (data.get("blocks") or {}).items()},
                   ranks={int(k): cls.from_json(v) for k, v in (data.get("ranks") or {}).items()})

    def to_json(self) -> JsonObject:
        blocks = {m: {str(size): v for size, v in by.items()} for m, by in self.blocks.items()}
        return {"runs": self.runs, "by_metric": dict(self.by_metric), **({"growth": dict(self.growth)} if self.growth else {}),
                **({"blocks": blocks} if blocks else {}),
                **({"ranks": {str(k): s.to_json() for k, s in self.ranks.items()}} if self.ranks else {})}



@dataclass(frozen=True)
class Entry:
    """One test's stored baseline: its peaks, per phase too, per rank of a launcher case, and what it was recorded
    under.

    Read from a validated file by lookup() and written by entry_from(): JSON
    only at the file's edge (and in an xdist worker's shipment of pending
    writes). A report row holds a part of it (`to_row_json`).
    """

    peaks: Peaks
    phases: Mapping[str, Peaks] = field(default_factory=dict)
    fingerprint: Fingerprint = field(default_factory=dict)
    recorded: str | None = None
    tolerance: Tolerance | None = None
    scenario: str | None = None
    fixes: tuple[str, ...] = ()
    params: JsonMapping = field(default_factory=dict)
    command: tuple[str, ...] | None = None  # a command case's arguments as its test writes them ({param}s unfilled)
    ranks: Mapping[int, Peaks] = field(default_factory=dict)  # a launcher case: rank -> its peaks
    rank_phases: Mapping[int, Mapping[str, Peaks]] = field(default_factory=dict)  # rank -> its phases
    spread: Spread | None = None  # recorded over several runs: their spread; None: one run (or an older entry)

    @classmethod
    def from_json(cls, data: JsonMapping) -> Entry:
        """An entry from a baseline file, or the part of one a report row holds (`to_row_json`)."""
        tolerance, spread = data.get("tolerance"), data.get("spread")
        return cls(peaks=Peaks.from_json(data["peaks"]), phases=_phases(data.get("phases")),
                   fingerprint=dict(data.get("fingerprint") or {}), recorded=data.get("recorded"),
                   tolerance=None if tolerance is None else Tolerance.from_json(tolerance),
                   scenario=data.get("scenario"), fixes=tuple(data.get("fixes") or ()),
                   params=dict(data.get("params") or {}),
                   command=None if data.get("command") is None else tuple(data["command"]),
                   ranks={int(r): Peaks.from_json(p) for r, p in (data.get("ranks") or {}).items()},
                   rank_phases={int(r): _phases(by) for r, by in (data.get("rank_phases") or {}).items()},
                   spread=None if spread is None else Spread.from_json(spread))

    def to_json(self) -> JsonObject:
        """The JSON of the entry (files sort their keys: a rewrite changes no unchanged entry)."""
        return {"scenario": self.scenario, "fixes": list(self.fixes), "params": dict(self.params),
                **({"command": list(self.command)} if self.command is not None else {}),
                "peaks": self.peaks.to_json(ALL), "phases": {n: p.to_json(ALL) for n, p in self.phases.items()},
                "tolerance": None if self.tolerance is None else self.tolerance.to_json(),
                "fingerprint": dict(self.fingerprint), "recorded": self.recorded,
                **({"ranks": {str(r): p.to_json(ALL) for r, p in self.ranks.items()}} if self.ranks else {}),
                **({"rank_phases": {str(r): {n: p.to_json(ALL) for n, p in by.items()}
                                    for r, by in self.rank_phases.items()}} if self.rank_phases else {}),
                **({"spread": self.spread.to_json()} if self.spread is not None else {})}

    def to_row_json(self) -> JsonObject:
        """What a report row holds of the entry it was compared against: its peaks, when and how it was recorded, and
        the spread of its runs where it was recorded over several (how far the case's fresh runs part)."""
        return {"peaks": self.peaks.to_json(), "recorded": self.recorded, "fingerprint": dict(self.fingerprint),
                "phases": {name: p.to_json(ALL) for name, p in self.phases.items()},
                **({"spread": self.spread.to_json()} if self.spread is not None else {})}


def _phases(data: Mapping[str, Mapping[str, int | None]] | None) -> dict[str, Peaks]:
    return {name: Peaks.from_json(p) for name, p in (data or {}).items()}
