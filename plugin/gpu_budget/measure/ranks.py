"""Per-rank figures of a launcher case (torchrun, accelerate launch): one figure per rank, from the tree's phases.

The process tree (tree.py) groups the processes a launcher started by the RANK
in their environment, each rank's own process with its DataLoader workers and
subprocesses, and keeps per phase each rank's largest window sum (`ram_tree`)
and its own process's peak (`ram`). Phases are the ones rank 0 marks (or the
command's own process, the launcher, where no rank marks): under DDP and FSDP
the ranks meet at every collective, so their phases line up with rank 0's to
within one step.

A budget applies to each rank, so a launcher case's row is its worst rank's:
its peaks, and its phases and steps too, so that every figure of the row means
the same thing (summary.py). The whole node's figures (the launcher with every
rank: what one host must hold) are kept under `node`: its peaks, phases and
steps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from gpu_budget.measure.gaps import reaches_past
from gpu_budget.model.figures import Peaks, PhaseRecord, RankFigures, RankGpu, steps_of
from gpu_budget.model.json_value import JsonMapping
from gpu_budget.model.metric import ALL


def by_rank(phases: Sequence[PhaseRecord]) -> list[RankFigures]:
    """Each rank's figures, by rank: its peaks (`ram`, `ram_tree`, and `vram_tree` where a GPU poller read its
    processes: gpu_tree.py), per phase under the node's phase names, and per step; [] where no process ran under
    a launcher's RANK."""
    found: dict[int, list[PhaseRecord]] = {}
    for phase in phases:
        for rank, figures in (phase.tree.ranks if phase.tree is not None else {}).items():
            found.setdefault(rank, []).append(PhaseRecord(
                name=phase.name, step=phase.step, seconds=phase.seconds, ram_peak=figures.ram, rss_anon=None,
                rss_file=None, ram_tree_peak=figures.ram_tree, vram_tree=figures.vram_tree))
    out = []
    for rank in sorted(found):
        records = found[rank]
        peaks = Peaks.most([p.peaks for p in records])
        out.append(RankFigures(rank, Peaks(ram=peaks.ram or 0, ram_tree=peaks.ram_tree or 0, vram_tree=peaks.vram_tree),
                               {p.name: p for p in records}, steps_of(records)))
    return out


def reported_gpu(marks: Iterable[tuple[int, str | None, JsonMapping | None, bool]]) -> dict[int, RankGpu]:
    """Each rank's GPU figures from its marks in the order they came: (rank, the phase it marks, None at its own
    process's exit, the GPU figures of the phase that mark closes, whether the phase it marks is a gap: the run after
    a block). The measuring child reads them so, and the session again from its events where the child was killed
    (a timeout) before it summed them."""
    out: dict[int, RankGpu] = {}
    marked: dict[int, str] = {}  # rank -> the phase it marked last (the one its next figures close)
    gaps: dict[int, set[str]] = {}
    for rank, phase, figures, gap in marks:
        if figures is not None:
            out[rank] = out.get(rank, RankGpu()).took(marked.get(rank, "run"), figures)
        if phase is not None:
            marked[rank] = phase
            gaps.setdefault(rank, set()).update([phase] if gap else [])
    return {rank: replace(gpu, gaps=frozenset(gaps.get(rank, ()))) for rank, gpu in sorted(out.items())}


def with_cuda(ranks: list[RankFigures], rank_cuda: Mapping[int, RankGpu] | None) -> list[RankFigures]:
    """Each rank with the GPU figures its own process reported (the allocator's peaks at its phase marks and exit,
    NVML's figure of its process), per phase and in all; a phase only the rank reported comes after the node's, and
    of those a gap (the run after a block) only where it reached past the rank's phase before it, as a function
    case's meter keeps one (gaps.py): its figures stay in the rank's peaks either way."""
    out = []
    for entry in ranks:
        gpu = (rank_cuda or {}).get(entry.rank)
        if gpu is None:
            out.append(entry)
            continue
        phases = dict(entry.phases)
        before: Peaks | None = None
        for name, figures in gpu.phases.items():
            if name in gpu.gaps and name not in phases and not reaches_past(figures, before):
                continue
            before = figures
            old = phases.get(name) or PhaseRecord(name=name, step=None, seconds=None, ram_peak=None, rss_anon=None,
                                                  rss_file=None)
            phases[name] = replace(old, **{m: v for m, v in figures.measured.items() if m != "vram_tree"})
        peaks = Peaks(**{m: entry.peaks.figure(m) if gpu.peaks.figure(m) is None or m == "vram_tree" else gpu.peaks.figure(m)
                         for m in ALL})
        out.append(replace(entry, peaks=peaks, phases=phases))
    return out


def rank_phases(entry: RankFigures, node_phases: Sequence[PhaseRecord]) -> tuple[PhaseRecord, ...]:
    """A rank's phases as phase records, in the node's order: the rank's own figures under the node's names, steps
    and times; a phase only the rank reported (its GPU peaks) after them."""
    known = {p.name: p for p in node_phases}
    return tuple(replace(p, step=known[name].step if name in known else p.step,
                         seconds=known[name].seconds if name in known else p.seconds)
                 for name, p in entry.phases.items())


def worst(ranks: Sequence[RankFigures]) -> RankFigures:
    """The rank whose allocated GPU peak was highest, where the ranks used a GPU, else whose RAM tree peaked
    highest (the lowest rank of a tie)."""
    return max(ranks, key=lambda r: (r.peaks.vram_allocated or 0, r.peaks.ram_tree or 0, -r.rank))


def largest(ranks: Sequence[RankFigures]) -> RankFigures:
    """The rank whose tree peaked highest (the lowest rank of a tie): the imbalance's numerator, which on a GPU need
    not be the worst rank (the one holding the most GPU memory)."""
    return max(ranks, key=lambda r: (r.peaks.ram_tree or 0, -r.rank))


def smallest(ranks: Sequence[RankFigures]) -> RankFigures:
    """The rank whose tree peaked lowest (the lowest rank of a tie), other than the largest where there are two or
    more: ranks peaking alike are named as two ("rank 0 / rank 1"), never one rank over itself."""
    top = largest(ranks)
    others = [r for r in ranks if r is not top] or list(ranks)
    return min(others, key=lambda r: (r.peaks.ram_tree or 0, r.rank))


def imbalance(ranks: Sequence[RankFigures]) -> float | None:
    """The largest rank's tree peak over the smallest's; None for fewer than two ranks or a rank at 0."""
    figures = [r.peaks.ram_tree or 0 for r in ranks]
    return max(figures) / min(figures) if len(figures) > 1 and min(figures) > 0 else None
