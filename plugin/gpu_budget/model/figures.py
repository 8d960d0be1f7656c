"""The typed figures of a measured run: peaks by metric, a phase's record, a step's, the tree's, a rank's, the node's.

Frozen dataclasses to the leaves, passed from the meter to the verdict and the
report; JSON only where bytes leave a process (a child's events, a baseline
file, the JSON report), through each type's to_json / from_json. A figure is
read by its name (`peaks.ram_tree`, `step.step`), or by a metric a caller
holds (`peaks.figure(Metric.RAM_TREE)`); records are not mappings.

A field added after reports were committed is written only where it was
measured, so a committed row reads back into the same row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from gpu_budget.model.json_value import JsonMapping, JsonObject
from gpu_budget.model.metric import ALL, GPU, LATER, Metric

FIRST_PHASE = "run"  # the run before its first phase mark: a command's, a runner's lead-in (meter.Meter.lead_in)


class Fields:
    """A frozen dataclass whose JSON is its fields by name (`_json`): records are read by attribute, never by key."""

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def _json(self, omit_none: tuple[str, ...] = ()) -> JsonObject:
        """The fields as JSON values, leaving out those of `omit_none` that are None."""
        return {name: _plain(getattr(self, name)) for name in self._names()
                if not (name in omit_none and getattr(self, name) is None)}


class Versioned(Fields):
    """A record whose fields grew over report versions: one read from JSON keeps the keys it was read with
    (`read_keys`) and writes back those alone, so a row of an earlier report reads back into the same row."""

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls) if f.name != "read_keys")

    def _json(self, omit_none: tuple[str, ...] = ()) -> JsonObject:
        out = super()._json(omit_none)
        return out if self.read_keys is None else {k: v for k, v in out.items() if k in self.read_keys}


def _plain(value: Any) -> Any:
    if isinstance(value, Fields) and hasattr(value, "to_json"):
        return value.to_json()
    return value


def _known(cls: type[Fields], data: JsonMapping, what: str) -> JsonObject:
    unknown = set(data) - set(cls._names())
    if unknown:
        raise ValueError(f"{what}: unknown field(s) {', '.join(sorted(map(str, unknown)))} "
                         f"(known: {', '.join(cls._names())})")
    return dict(data)


@dataclass(frozen=True, eq=True)
class Peaks(Fields):
    """Bytes per metric; None where not measured (every GPU figure on a host without CUDA).

    ram: the main process's peak; ram_tree: with its descendants, the peak over
    time of their sum (the gated host-RAM figure); ram_tensor: live CPU tensor
    bytes; vram_allocated / vram_reserved: torch's caching allocator (allocated
    is gated); vram_device: NVML's figure of the process; vram_tree: NVML's
    figures of a command's processes, summed (gpu_tree.py).
    """

    ram: int | None = None
    ram_tensor: int | None = None
    ram_tree: int | None = None
    vram_allocated: int | None = None
    vram_reserved: int | None = None
    vram_device: int | None = None
    vram_tree: int | None = None

    @property
    def gated_ram(self) -> int | None:
        """The gated host-RAM figure: the process tree's, or the main process's where no tree was read."""
        return self.ram_tree if self.ram_tree is not None else self.ram

    def figure(self, metric: Metric | str) -> int | None:
        """The figure of one metric (a metric the caller holds by name: a group of model/metric.py, a row's)."""
        return getattr(self, Metric(metric).value)

    @property
    def measured(self) -> dict[Metric, int]:
        """The metrics that hold a figure."""
        return {m: value for m in ALL if (value := self.figure(m)) is not None}

    def to_json(self, omit_none: tuple[str, ...] = ("vram_tree",)) -> dict[str, int | None]:
        return self._json(omit_none)

    @classmethod
    def from_json(cls, data: JsonMapping | None) -> Peaks:
        return cls(**_known(cls, data or {}, "peaks"))

    @classmethod
    def most(cls, many: list[Peaks]) -> Peaks:
        """Each metric's largest figure over `many` (None where none holds one)."""
        return cls(**{m: max((v for p in many if (v := p.figure(m)) is not None), default=None) for m in ALL})

    def without_gpu(self) -> Peaks:
        return Peaks(**{m: None if m in GPU else self.figure(m) for m in ALL})


@dataclass(frozen=True)
class RankTree(Fields):
    """One rank's share of a phase's tree reading: its own process's peak, the peak of its processes' sum."""

    ram: int
    ram_tree: int
    processes: int
    vram_tree: int | None = None

    def to_json(self) -> JsonObject:
        return self._json(("vram_tree",))

    @classmethod
    def from_json(cls, data: JsonMapping) -> RankTree:
        return cls(**_known(cls, data, "a rank's tree reading"))


@dataclass(frozen=True, kw_only=True)
class ProcessDetail(Versioned):
    """One descendant as a phase saw it (the largest are listed in the reading)."""

    pid: int
    ppid: int
    hwm: int
    shared: int | None
    private_peak: int
    whole: bool = False
    exited: bool
    new: bool
    execs: int
    reported: bool
    rank: int | None = None
    read_keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> JsonObject:
        return self._json()

    @classmethod
    def from_json(cls, data: JsonMapping) -> ProcessDetail:
        return cls(**_known(cls, data, "a descendant's detail"), read_keys=tuple(data))


@dataclass(frozen=True, kw_only=True)
class TreeReading(Versioned):
    """What the descendants added in one phase (tree.py says how each figure is read). Bytes; times in seconds."""

    private: int = 0  # the peak over time of the descendants' summed contributions: added to the main process's peak
    peak_sum: int = 0  # the sum of each descendant's own peak contribution and `held`: the loose bound of `private`
    hwm_sum: int = 0  # the sum of their VmHWM (counts pages shared with the parent once per process)
    processes: int = 0  # descendants seen in the phase
    exited: int = 0  # of them, gone before its end: their figure is from the last read before they exited
    reported: int = 0  # of the exited, those that reported their own figures as they exited (exact)
    unread: int = 0  # of them, gone before their VmHWM was ever read: counted as adding nothing
    max_gap: float | None = None  # the longest time between two reads in the phase (an exiting descendant's blind spot)
    windows: int = 0  # polls in the phase: each one a window whose sum is a candidate for the peak
    whole: Mapping[int, int] = field(default_factory=dict)  # pid -> phase peak of each whole-counted process
    held: int = 0  # the most the tree held in tmpfs files none of its processes mapped, at one read (held_tmpfs.py)
    # the processes a launcher started with RANK in their environment, each with its descendants (none: {})
    ranks: Mapping[int, RankTree] = field(default_factory=dict)
    detail: tuple[ProcessDetail, ...] = ()
    read_keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> JsonObject:
        out = self._json()
        typed = {"whole": {str(k): v for k, v in self.whole.items()},
                 "ranks": {str(k): v.to_json() for k, v in self.ranks.items()},
                 "detail": [d.to_json() for d in self.detail]}
        out.update({k: v for k, v in typed.items() if k in out})
        return out

    @classmethod
    def from_json(cls, data: JsonMapping) -> TreeReading:
        read = _known(cls, data, "a tree reading")
        return cls(**{**read, "whole": {int(k): v for k, v in (read.get("whole") or {}).items()},
                      "ranks": {int(k): RankTree.from_json(v) for k, v in (read.get("ranks") or {}).items()},
                      "detail": tuple(ProcessDetail.from_json(d) for d in read.get("detail") or ())},
                   read_keys=tuple(data))


@dataclass(frozen=True)
class PhaseRecord(Fields):
    """What one phase cost. Byte counts; GPU fields None without CUDA."""

    name: str
    step: int | None = None
    seconds: float | None = None
    ram_peak: int | None = None
    rss_anon: int | None = None  # RssAnon and RssFile at the phase's end, not at its peak: the kernel keeps no peak of
    rss_file: int | None = None  # either, so they say what the phase left resident, not what its peak was made of
    vram_allocated: int | None = None
    vram_reserved: int | None = None
    vram_device: int | None = None
    ram_tensor: int | None = None  # live CPU tensor bytes' high-water mark (tensors.TensorPeak); None on CUDA runs
    ram_tree_peak: int | None = None  # main process + descendants' private peaks; None where the tree is not read
    tree: TreeReading | None = None  # how the tree figure was made
    vram_tree: int | None = None  # a command's: NVML's figures of its processes, summed, peak over time (gpu_tree.py)

    @property
    def peaks(self) -> Peaks:
        """The phase's figures by metric, as a baseline stores a phase."""
        return Peaks(ram=self.ram_peak, ram_tensor=self.ram_tensor, ram_tree=self.ram_tree_peak,
                     vram_allocated=self.vram_allocated, vram_reserved=self.vram_reserved,
                     vram_device=self.vram_device, vram_tree=self.vram_tree)

    def to_json(self) -> JsonObject:
        return self._json(("vram_tree",))

    @classmethod
    def from_json(cls, data: JsonMapping) -> PhaseRecord:
        data = _known(cls, data, "a phase record")
        tree = data.get("tree")
        return cls(**{**data, "tree": TreeReading.from_json(tree) if tree else None})


@dataclass(frozen=True)
class Step(Fields):
    """One optimizer step's figures, in the per-step series its growth is fitted over."""

    step: int
    ram: int | None = None
    ram_tree: int | None = None
    ram_tensor: int | None = None
    vram_allocated: int | None = None
    vram_reserved: int | None = None
    vram_device: int | None = None
    vram_tree: int | None = None

    @classmethod
    def of(cls, record: PhaseRecord) -> Step:
        return cls.at(record.step, record.peaks)

    @classmethod
    def at(cls, step: int, p: Peaks) -> Step:
        return cls(step=step, ram=p.ram, ram_tree=p.ram_tree, ram_tensor=p.ram_tensor, vram_allocated=p.vram_allocated,
                   vram_reserved=p.vram_reserved, vram_device=p.vram_device, vram_tree=p.vram_tree)

    def figure(self, metric: Metric | str) -> int | None:
        """The step's figure of one metric."""
        return getattr(self, Metric(metric).value)

    def to_json(self, sparse: bool = False) -> JsonObject:
        """All figures, those added later where measured; `sparse`: only the figures measured (a rank's steps)."""
        return self._json(self._names() if sparse else LATER)

    @classmethod
    def from_json(cls, data: JsonMapping) -> Step:
        return cls(**_known(cls, data, "a step"))


@dataclass(frozen=True)
class RankFigures(Fields):
    """One rank of a launcher case: its peaks, its figures per phase (the node's phase names) and per step.
    unread_steps: the step marks its processes sent that marked nothing (only rank 0's own process marks the steps,
    every rank's figures read at them): a launch whose rank 0 marked none is told so, not told to mark steps."""

    rank: int
    peaks: Peaks
    phases: Mapping[str, PhaseRecord] = field(default_factory=dict)
    steps: tuple[Step, ...] = ()
    unread_steps: int = 0

    def to_json(self) -> JsonObject:
        sparse = ("name", "seconds", "rss_anon", "rss_file", "tree", "step", "ram_tensor", "vram_allocated",
                  "vram_reserved", "vram_device", "vram_tree")
        return {"rank": self.rank, "peaks": self.peaks.to_json(ALL),
                "phases": {name: {k: v for k, v in p._json(sparse).items() if k != "name"}
                           for name, p in self.phases.items()},
                "steps": [s.to_json(sparse=True) for s in self.steps],
                **({"unread_steps": self.unread_steps} if self.unread_steps else {})}

    @classmethod
    def from_json(cls, data: JsonMapping) -> RankFigures:
        phases = {name: PhaseRecord.from_json({"name": name, **p}) for name, p in (data.get("phases") or {}).items()}
        return cls(rank=int(data["rank"]), peaks=Peaks.from_json(data.get("peaks")), phases=phases,
                   steps=tuple(Step.from_json(s) for s in data.get("steps") or ()),
                   unread_steps=int(data.get("unread_steps") or 0))


@dataclass(frozen=True)
class Node(Fields):
    """A launcher case's whole node: the launcher's own process (ram), every process together (ram_tree,
    vram_tree), per phase and per step."""

    peaks: Peaks
    phases: tuple[PhaseRecord, ...] = ()
    steps: tuple[Step, ...] = ()

    def to_json(self) -> JsonObject:
        """Its peaks, phases and steps; one that kept no phases (read from a report written before the node kept
        them) as its peaks alone, as that report held them."""
        if not self.phases and not self.steps:
            return self.peaks.to_json(ALL)
        return {"peaks": self.peaks.to_json(ALL), "phases": [p.to_json() for p in self.phases],
                "steps": [s.to_json() for s in self.steps]}

    @classmethod
    def from_json(cls, data: JsonMapping) -> Node:
        if "peaks" not in data:  # a report written before the node kept its phases held its peaks flat
            return cls(Peaks.from_json(data))
        return cls(Peaks.from_json(data["peaks"]), tuple(PhaseRecord.from_json(p) for p in data.get("phases") or ()),
                   tuple(Step.from_json(s) for s in data.get("steps") or ()))


@dataclass(frozen=True)
class RankGpu(Fields):
    """What one rank's own process reported of its GPU: its largest figures, and each of its phases' (by the names
    the rank marked), from its allocator and NVML (command.py gathers them as the rank's marks arrive); `gaps`: the
    phases it began as the run after a block, kept only where they add (ranks.with_cuda)."""

    peaks: Peaks = Peaks()
    phases: Mapping[str, Peaks] = field(default_factory=dict)
    gaps: frozenset[str] = frozenset()

    def took(self, phase: str, figures: JsonMapping) -> RankGpu:
        """This with one more report: the figures of `phase`, each kept where larger than before."""
        def grown(old: Peaks) -> Peaks:
            return Peaks(**{m: max(v, old.figure(m) or 0) if isinstance(v := figures.get(m), int) and not
                            isinstance(v, bool) and m in GPU else old.figure(m) for m in ALL})

        return RankGpu(grown(self.peaks), {**self.phases, phase: grown(self.phases.get(phase, Peaks()))}, self.gaps)


def steps_of(records: Sequence[PhaseRecord]) -> tuple[Step, ...]:
    """The per-step series of a run's phase records: records in a row that mark one step number (a loop calling
    step(global_step) at each micro-batch) are one optimizer step, at the most each figure reached in them."""
    groups: list[list[PhaseRecord]] = []
    for record in (r for r in records if r.step is not None):
        if groups and groups[-1][0].step == record.step:
            groups[-1].append(record)
        else:
            groups.append([record])
    return tuple(Step.at(group[0].step, Peaks.most([r.peaks for r in group])) for group in groups)
