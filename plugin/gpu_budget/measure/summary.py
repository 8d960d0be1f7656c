"""What a measured run came to: its peaks, per-step series and growth, per rank and for the node, from its phases.

The meter records phases (meter.py); this sums them up, in the measuring child
for a run that finished and in the parent for one that was killed (from the
phases it streamed). A launcher case is summarised as its worst rank, every
figure of the row that rank's, with the node's beside it (ranks.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from gpu_budget.measure import rises
from gpu_budget.measure.ranks import by_rank, rank_phases, with_cuda, worst
from gpu_budget.model.figures import Fields, Node, Peaks, PhaseRecord, RankFigures, RankGpu, Step, steps_of
from gpu_budget.model.json_value import JsonMapping, JsonObject
from gpu_budget.model.metric import ALL, GPU, GROWTH, NODE


@dataclass(frozen=True)
class Summary(Fields):
    """A run's figures: phases in order, peaks over them and over the steps, the per-step series, its growth.

    growth: "<metric>_per_step", the growth per step rises.py reads: the
    figure the growth rule judges; None where the run is too short to judge.
    ranks / node: a launcher case's ranks, and the node's figures (its peaks,
    phases and steps are then the worst rank's).
    """

    phases: tuple[PhaseRecord, ...]
    peaks: Peaks
    step_peaks: Peaks
    steps: tuple[Step, ...]
    growth: Mapping[str, float | None]
    cuda: bool
    ram_method: str | None = "vmhwm"
    ram_tree_method: str | None = None
    ram_tree_bound: str | None = None
    ranks: tuple[RankFigures, ...] = ()
    node: Node | None = None

    def to_json(self) -> JsonObject:
        """As it crosses from the measuring child to the parent (events.Finished, events.Failed)."""
        return {"phases": [p.to_json() for p in self.phases], "peaks": self.peaks.to_json(),
                "step_peaks": self.step_peaks.to_json(), "steps": [s.to_json() for s in self.steps],
                "growth": dict(self.growth), "cuda": self.cuda, "ram_method": self.ram_method,
                "ram_tree_method": self.ram_tree_method, "ram_tree_bound": self.ram_tree_bound,
                "ranks": [r.to_json() for r in self.ranks], "node": None if self.node is None else self.node.to_json()}

    @classmethod
    def from_json(cls, data: JsonMapping) -> Summary:
        return cls(phases=tuple(PhaseRecord.from_json(p) for p in data["phases"]),
                   peaks=Peaks.from_json(data["peaks"]), step_peaks=Peaks.from_json(data.get("step_peaks")),
                   steps=tuple(Step.from_json(s) for s in data.get("steps") or ()), growth=dict(data.get("growth") or {}),
                   cuda=bool(data.get("cuda")), ram_method=data.get("ram_method"),
                   ram_tree_method=data.get("ram_tree_method"), ram_tree_bound=data.get("ram_tree_bound"),
                   ranks=tuple(RankFigures.from_json(r) for r in data.get("ranks") or ()),
                   node=None if data.get("node") is None else Node.from_json(data["node"]))


def tree_bound(phases: Sequence[PhaseRecord]) -> str | None:
    """How far the tree figure of these phases can be off, from what its reads saw (None: no tree read).

    Exact per process for descendants alive at a phase's end and for forked
    multiprocessing children, which report their own figures as they exit; a
    descendant that exited unreported was last read at most the phase's
    longest poll gap before it went; one gone before any read adds nothing, and
    one born and gone between two polls without reporting is never seen at all.
    The error on planted spikes is measured in benchmarks/RESULTS.md (1b).
    """
    trees = [p.tree for p in phases if p.tree is not None]
    if not trees:
        return None
    polled = sum(t.exited - t.reported - t.unread for t in trees)  # read at least once, then gone unreported
    unread = sum(t.unread for t in trees)
    if not polled and not unread:
        return ("exact per process (every descendant seen was read alive at a phase end or reported at its exit; one "
                "born and gone between two polls without reporting is not seen)")
    gap = max((t.max_gap or 0) for t in trees if t.exited - t.reported or t.unread)
    return (f"{polled} descendant(s) exited unreported, last read at most {gap:.3f} s before they went (what they "
            f"did after it is missing); {unread} gone before any read (counted as nothing)")


def named_once(phases: Sequence[PhaseRecord]) -> tuple[PhaseRecord, ...]:
    """The phases, a name met again (an evaluation each epoch) numbered from its second time: 'eval (2)', past a
    number a phase of that name already holds (a runner's own 'eval (2)'). Keyed by name, a later phase replaced an
    earlier one, and a row's peak could be in none of the phases it listed. The run after a block, kept only where
    it added (meter.py), is named after the block it follows ('after eval (3)'), not by its own count."""
    seen: Counter[str] = Counter()
    used: set[str] = set()
    out: list[PhaseRecord] = []
    for phase in phases:
        name = phase.name
        if out and name == f"after {phases[len(out) - 1].name}" and f"after {out[-1].name}" not in used:
            name = f"after {out[-1].name}"
        while name in used:
            seen[phase.name] += 1
            name = f"{phase.name} ({seen[phase.name] + 1})"
        used.add(name)
        out.append(phase if name == phase.name else replace(phase, name=name))
    return tuple(out)


def _series(phases: Sequence[PhaseRecord], cuda: bool) -> tuple[Peaks, Peaks, tuple[Step, ...], dict[str, float | None]]:
    """Peaks over the phases and over the train steps alone, the per-step series, and its growth."""
    steps = steps_of(phases)
    peaks = Peaks.most([p.peaks for p in phases])
    step_peaks = Peaks.most([p.peaks for p in phases if p.step is not None])
    growth = {f"{m}_per_step": rises.growth([s.figure(m) for s in steps], [s.step for s in steps]) for m in GROWTH}
    if not cuda:
        peaks, step_peaks = peaks.without_gpu(), step_peaks.without_gpu()
        growth["vram_allocated_per_step"] = growth["vram_reserved_per_step"] = None
    return peaks, step_peaks, steps, growth


def summarize(phases: Sequence[PhaseRecord], cuda: bool, ram_method: str | None = "vmhwm",
              ram_tree_method: str | None = None, rank_cuda: Mapping[int, RankGpu] | None = None,
              unread_steps: Mapping[int, int] | None = None) -> Summary:
    """Peaks over all phases, the per-step series and its growth, from phase records.

    `cuda`: the measuring process used CUDA itself (a function case); a command case's GPU figures are the ones
    its processes reported, so where a phase holds one the run used CUDA too. A launcher case (its processes ran
    under a RANK) is summarised as its worst rank (ranks.py), its GPU peaks per rank from `rank_cuda` (what the
    ranks' own processes reported: command.py), and the node's figures under `node`; `unread_steps`: rank -> its
    step marks that marked nothing (RankFigures.unread_steps).
    """
    phases = named_once(phases)
    ranks = [replace(r, unread_steps=(unread_steps or {}).get(r.rank, 0)) for r in with_cuda(by_rank(phases), rank_cuda)]
    cuda = cuda or any(p.peaks.figure(m) is not None for p in phases for m in GPU) or \
        any(r.peaks.figure(m) is not None for r in ranks for m in GPU)
    peaks, step_peaks, steps, growth = _series(phases, cuda)
    node, rows = None, phases
    if ranks:
        top = worst(ranks)
        node = Node(Peaks(**{m: peaks.figure(m) for m in NODE}), phases, steps)
        rows = rank_phases(top, phases)
        _, step_peaks, steps, growth = _series(rows, cuda)
        peaks = Peaks(**{m: top.peaks.figure(m) for m in ALL})
    return Summary(phases=rows, peaks=peaks, step_peaks=step_peaks, steps=steps, growth=growth, cuda=cuda,
                   ram_method=ram_method, ram_tree_method=ram_tree_method if peaks.ram_tree is not None else None,
                   ram_tree_bound=tree_bound(phases), ranks=tuple(ranks), node=node)
