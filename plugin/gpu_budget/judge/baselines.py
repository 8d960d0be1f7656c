"""Baseline entries: what one test's stored baseline holds, how one is made from a measurement, found in a file.

An entry recorded over N fresh runs (--gpu-budget-record-runs=N) holds the
median run's figures and the spread of the gated ones over the N runs
(`Spread`), which the verdict widens its allowance to (compare.py). An entry
without one (every entry recorded before, or over one run) is judged at its
tolerance alone.

Each entry's fingerprint names the imported packages by a digest; the file's
top-level "packages" maps each digest to its package list (contents.py). The
files themselves are the store's (store.py: found, read, written, pruned).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpu_budget.declare.params import Params
from gpu_budget.judge.contents import Contents, Listing
from gpu_budget.model.budget import Tolerance
from gpu_budget.model.entry import Entry, Spread
from gpu_budget.model.json_value import JsonMapping
from gpu_budget.model.result import Measurement
from gpu_budget.model.setup import Fingerprint


def median_run(runs: Sequence[Measurement]) -> Measurement:
    """The run a baseline recorded over several keeps: the median by the gated host-RAM peak (of an even number, the
    upper of the two middle runs), whole, so its phases and ranks agree with its peaks.

    Not the largest: a baseline at the noisiest run's peak hides a regression up to the spread beyond the allowance;
    not the smallest: an ordinary run would then sit a whole spread above it. The median sits inside the range the
    runs covered, and the allowance, a multiple of the spread (compare.SPREAD_MULTIPLE), covers any run of it."""
    ordered = sorted(runs, key=lambda m: m.peaks.gated_ram or 0)
    return ordered[len(ordered) // 2]


def lookup(data: JsonMapping, scale: str, test_id: str) -> Entry | None:
    """The entry a baseline file's data (files.load) holds under `test_id` at `scale`, or None."""
    return Contents.from_json(data).entry(scale, test_id)


@dataclass(frozen=True)
class Configured:
    """What an entry records of the scenario measured: its name, the fixes applied, its params at the scale."""

    name: str
    fixes: tuple[str, ...]
    params: Params

    @classmethod
    def from_json(cls, data: JsonMapping) -> Configured:
        """From the scenario's JSON at the scale measured (Scenario.to_json)."""
        return cls(data["name"], tuple(data["fixes"]), data["params"])


def entry_from(measurement: Measurement, scenario: JsonMapping, tolerance: Tolerance, fprint: Fingerprint,
               today: str, spread: Spread | None = None, command: Sequence[str] | None = None) -> Entry:
    """The baseline entry for one successful measurement (a launcher case's per rank too, phases included) of the
    scenario whose JSON at the scale measured is `scenario`; `spread`: that of the runs it was chosen from
    (median_run), where it was recorded over several; `command`: a command case's arguments as its test writes them,
    so a later run whose arguments differ is told so (compare.command_note)."""
    configured = Configured.from_json(scenario)
    return Entry(
        scenario=configured.name,
        fixes=configured.fixes,
        params=configured.params,
        command=None if command is None else tuple(command),
        peaks=measurement.peaks,
        phases={name: phase.peaks for name, phase in measurement.phases.items()},
        tolerance=tolerance,
        fingerprint=fprint,
        recorded=today,
        ranks={r.rank: r.peaks for r in measurement.ranks},
        rank_phases={r.rank: {name: p.peaks for name, p in r.phases.items()} for r in measurement.ranks},
        spread=spread,
    )


def packages_of(data: JsonMapping, entry: Entry | None) -> Listing | None:
    """The package list an entry's fingerprint refers to, if the file's data (files.load) holds it."""
    return Contents.from_json(data).packages_for(entry)
