"""What a measured child tells its parent, as typed events: one JSON line each, encoded and decoded here only.

The child (child.py) writes a line as each thing happens, so a child killed
mid-run (OOM killer, timeout) still leaves what it measured; the parent
(forkserver.py) reads the lines back into these events. A line cut short by a
kill ends the reading; a line of an unknown kind is an error naming it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import TypeVar

from gpu_budget.declare.params import Json
from gpu_budget.measure.host import Probed
from gpu_budget.measure.summary import Summary
from gpu_budget.model.figures import PhaseRecord
from gpu_budget.model.result import Failure


@dataclass(frozen=True)
class Started:
    """The measured run began: how it reads its figures."""

    kind = "start"
    pid: int
    cuda: bool
    ram_method: str
    ram_tree_method: str | None
    subreaper: bool
    command: bool = False  # a command case: the figures are the command's tree, not this process's


@dataclass(frozen=True)
class PhaseBegun:
    """A phase began: where the run was, should it be stopped (a timeout, a kill) before the phase ended."""

    kind = "begin"
    name: str
    step: int | None = None
    info: dict[str, Json] | None = None  # the runner's facts so far, where they changed: a child killed later keeps them


@dataclass(frozen=True)
class PhaseEnded:
    """One finished phase."""

    kind = "phase"
    record: PhaseRecord


@dataclass(frozen=True)
class TreeFigure:
    """The open phase's running figures (so a kill mid-phase leaves them): the tree's, the main process's peak in the
    phase (None: not read yet), and under a launcher each rank's (its own process's peak, its processes' largest
    sum), by rank as JSON keys it; on a GPU host the tree's summed NVML figure and each rank's (gpu_tree.py), None
    where no poll matched a process yet; where the measured process itself runs on CUDA (a function case) its own
    GPU peaks, by metric. Each one sent is of the phase begun last (child._TreeStream)."""

    kind = "tree"
    ram_tree: int
    ranks: dict[str, list[int]] | None = None
    ram: int | None = None
    vram_tree: int | None = None
    rank_vram: dict[str, int] | None = None
    vram: dict[str, int] | None = None  # vram_allocated, vram_reserved, vram_device: those read

    def rank_figures(self) -> dict[int, tuple[int, int]]:
        """rank -> (its own process's peak, its processes' largest sum) in the open phase."""
        return {int(rank): (ram, ram_tree) for rank, (ram, ram_tree) in (self.ranks or {}).items()}

    def rank_vram_tree(self) -> dict[int, int]:
        """rank -> the largest NVML sum of its processes in the open phase."""
        return {int(rank): value for rank, value in (self.rank_vram or {}).items()}


@dataclass(frozen=True)
class SnapshotDumped:
    kind = "snapshot"
    path: str


@dataclass(frozen=True)
class Finished:
    """The run ended normally: the meter's summary and the facts for the row."""

    kind = "result"
    summary: Summary
    info: dict[str, Json]  # the runner's facts (anything not JSON goes as its str) and the meter's


@dataclass(frozen=True)
class Failed:
    """The run raised (or its command failed): what, and the facts gathered so far."""

    kind = "error"
    cause: str  # oom, exception, missing-dependency, exit, killed, command, leftover
    type: str | None
    message: str
    traceback: str | None
    info: dict[str, Json] = field(default_factory=dict)
    summary: Summary | None = None  # a failed command's figures up to its end (its measuring child is whole)

    def failure(self) -> Failure:
        return Failure(kind=self.cause, type=self.type, message=self.message, traceback=self.traceback)


@dataclass(frozen=True)
class DeviceSeen:
    """A probe child's answer: its device (CUDA or not, GPU, versions) and setup (facts read off the host)."""

    kind = "device"
    device: Probed


@dataclass(frozen=True)
class Prepared:
    kind = "prepared"


@dataclass(frozen=True)
class RankProgress:
    """A launcher case's rank marked a phase, or its own process reached its exit: where each rank was, should the
    case be stopped at its timeout (a hung rank is named by it), and the GPU peaks its process reported of the phase
    that mark closes, which a stopped case's row keeps (ranks.reported_gpu)."""

    kind = "rank"
    rank: int
    phase: str | None  # the last phase it marked (None: it exited)
    cuda: dict[str, int] | None = None
    gap: bool = False  # the phase it marked is the run after a block (kept where it adds: ranks.with_cuda)


Event = Started | PhaseBegun | PhaseEnded | TreeFigure | SnapshotDumped | Finished | Failed | DeviceSeen | Prepared | RankProgress
KINDS: dict[str, type] = {cls.kind: cls for cls in (Started, PhaseBegun, PhaseEnded, TreeFigure, SnapshotDumped,
                                                      Finished, Failed, DeviceSeen, Prepared, RankProgress)}
E = TypeVar("E")


class EventError(ValueError):
    """A line from a child that is no event of this protocol."""


# the typed fields of events, each with its JSON form (to_json / from_json): every other field is plain JSON
TYPED = {"record": PhaseRecord, "summary": Summary, "device": Probed}


def encode(event: Event) -> str:
    data = {f.name: getattr(event, f.name) for f in fields(event)}
    for name in TYPED.keys() & data.keys():
        if data[name] is not None:
            data[name] = data[name].to_json()
    return json.dumps({"event": event.kind, **data}, default=str) + "\n"


def decode(line: str) -> Event:
    data: dict[str, Json] = json.loads(line)
    cls = KINDS.get(data.pop("event", None))
    if cls is None:
        raise EventError(f"a measured child sent an event of no known kind: {line[:200]!r}")
    names = {f.name for f in fields(cls)}
    data = {k: v for k, v in data.items() if k in names}
    for name in TYPED.keys() & data.keys():
        if data[name] is not None:
            data[name] = TYPED[name].from_json(data[name])
    return cls(**data)


def read(path: str) -> list[Event]:
    """The events in a child's file, up to a last line cut short by a kill."""
    out = []
    with open(path) as fh:
        for line in fh:
            try:
                out.append(decode(line))
            except json.JSONDecodeError:
                break
    return out


def first(events: list, cls: type[E]) -> E | None:
    return next((e for e in events if isinstance(e, cls)), None)
