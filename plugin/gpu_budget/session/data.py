"""What a gate session has gathered, as one plain object: also what an xdist worker ships its controller.

Rows (typed Results), notes, explorations, baseline entries waiting to be
written (and the rows whose entry was withheld), which budget tests were collected and the device read: everything
the outputs are rendered from. A worker's copy crosses to the controller as
JSON (`to_json` / `from_json`) and is merged there (`merge`), so a serial run
and an xdist run render from the same data.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TypeVar

from gpu_budget.judge.store import PendingWrite
from gpu_budget.measure.device import DeviceInfo
from gpu_budget.model.hardware import Hardware
from gpu_budget.model.json_value import JsonMapping, JsonObject
from gpu_budget.model.result import EnvironmentRecord, Note, Result
from gpu_budget.search.exploration import Exploration

_T = TypeVar("_T")


@dataclass(frozen=True)
class Explored:
    """What one gpu_budget.explore() call found, and the test that called it."""

    nodeid: str
    exploration: Exploration

    def to_json(self) -> JsonObject:
        return {"nodeid": self.nodeid, "exploration": self.exploration.to_json()}

    @classmethod
    def from_json(cls, data: JsonMapping) -> Explored:
        return cls(data["nodeid"], Exploration.from_json(data["exploration"]))


@dataclass
class SessionData:
    rows: list[Result] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)  # measured findings that are not one case's peak (fixture.note)
    explorations: list[Explored] = field(default_factory=list)
    pending: list[PendingWrite] = field(default_factory=list)  # baseline entries a worker ships its controller
    withheld: list[str] = field(default_factory=list)  # rows whose entry was not written: their test did not pass
    dropped: dict[str, list[str]] = field(default_factory=dict)  # baseline file -> keys an update pruned (controller's)
    kept: dict[str, list[str]] = field(default_factory=dict)  # baseline file -> keys no longer measured a selection kept
    collected: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # module -> marked test names, parameters included
    order: list[str] = field(default_factory=list)  # node ids of the budget tests, in collection order
    files: dict[str, str] = field(default_factory=dict)  # node id -> test file as collected (a node id is no path from the rootdir outside it)
    selected: int = 0  # budget tests left to run after deselection (the fail-safe's count)
    chosen: list[str] = field(default_factory=list)  # their node ids, in order: those a stop left unrun are named
    narrowed: bool = False  # deselection or node ids: baselines are not pruned
    probes: int = 0  # unjudged children that ran (peak(): bisection, exploration): they count as measured
    ran_functions: bool = False  # a function case's child ran (a command's processes import what they need themselves)
    hardware: Hardware | None = None  # the session's fingerprint (measure/host.py collect), with its hardware key
    device: DeviceInfo | None = None  # what the forkserver's probe child saw
    environments: list[EnvironmentRecord] = field(default_factory=list)  # each made or found made, per process

    def to_json(self) -> JsonObject:
        return {
            "rows": [r.to_json() for r in self.rows], "notes": [n.to_json() for n in self.notes],
            "explorations": [e.to_json() for e in self.explorations],
            "pending": [w.to_json() for w in self.pending], "withheld": self.withheld,
            "collected": {k: sorted(v) for k, v in self.collected.items()},
            "order": self.order, "files": self.files, "selected": self.selected, "chosen": self.chosen, "narrowed": self.narrowed, "probes": self.probes,
            "ran_functions": self.ran_functions,
            "hardware": None if self.hardware is None else self.hardware.to_json(),
            "device": None if self.device is None else self.device.to_json(),
            "environments": [e.to_json() for e in self.environments],
        }

    @classmethod
    def from_json(cls, data: JsonMapping) -> SessionData:
        collected: dict[str, set[str]] = defaultdict(set)
        for module, names in data["collected"].items():
            collected[module].update(names)
        return cls(rows=[Result.from_json(r) for r in data["rows"]], notes=[Note.from_json(n) for n in data["notes"]],
                   explorations=[Explored.from_json(e) for e in data["explorations"]], pending=[PendingWrite.from_json(w) for w in data["pending"]],
                   withheld=list(data.get("withheld", [])), collected=collected,
                   order=list(data["order"]), files=dict(data.get("files", {})), selected=data["selected"], chosen=list(data.get("chosen", [])), narrowed=data["narrowed"],
                   probes=data["probes"], ran_functions=data["ran_functions"], hardware=Hardware.read(data["hardware"]),
                   device=None if data["device"] is None else DeviceInfo.from_json(data["device"]),
                   environments=[EnvironmentRecord.from_json(e) for e in data.get("environments", [])])

    def merge(self, other: SessionData) -> None:
        """On the xdist controller: take in one worker's data; rows and explorations keep collection order."""
        self.rows.extend(other.rows)
        self.notes.extend(other.notes)
        self.explorations.extend(other.explorations)
        self.pending.extend(other.pending)
        self.withheld.extend(other.withheld)
        for module, names in other.collected.items():
            self.collected[module].update(names)
        self.order = self.order or other.order
        self.files.update(other.files)
        self.selected = max(self.selected, other.selected)  # every worker collects the whole selection
        self.chosen = self.chosen or other.chosen
        self.narrowed = self.narrowed or other.narrowed
        self.probes += other.probes
        self.ran_functions = self.ran_functions or other.ran_functions
        self.hardware = self.hardware or other.hardware
        self.device = self.device or other.device
        self.environments.extend(other.environments)
        self.rows[:] = in_order(self.rows, [r.test_nodeid for r in self.rows], self.order)
        self.explorations[:] = in_order(self.explorations, [e.nodeid for e in self.explorations], self.order)


def in_order(items: list[_T], nodeids: list[str], order: list[str]) -> list[_T]:
    """`items` (the i-th of test nodeids[i]) in collection order, stable: a test's labels keep their order. A node id
    collected twice (--keep-duplicates) ran twice: its items split evenly over its places, first ones first, as a
    serial run lists them, instead of all at one of its places."""
    places: dict[str, list[int]] = defaultdict(list)
    for i, nodeid in enumerate(order):
        places[nodeid].append(i)
    counts = Counter(nodeids)
    seen = Counter[str]()

    def key(nodeid: str) -> int:
        at = places.get(nodeid)
        if not at:
            return len(order)
        nth, seen[nodeid] = seen[nodeid], seen[nodeid] + 1
        return at[min(nth // -(-counts[nodeid] // len(at)), len(at) - 1)]

    keys = [key(nodeid) for nodeid in nodeids]
    return [item for _, item in sorted(zip(keys, items, strict=True), key=lambda pair: pair[0])]
