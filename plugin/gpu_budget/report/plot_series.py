"""What a case's plot draws beyond its phases' peaks, as data: where a died child ended, the growth the verdict
judged, and one line per rank.

The growth comes from the row's own verdict (Result.growth_projection, judge/growth.py):
the judged steps, the growth per step and its projection to the declared run
length, in the verdict's words and figures, so the picture and the message
read the same. A child killed or timed out inside a phase keeps that phase only as far as it streamed it, so where
the row's "peak seen so far" is above every phase the plot draws it as one more point, named by the phase its
failure records (Failure.phase). A launcher case's panel draws each rank's own figures, captioned by rank. plots.py draws what
this module returns; nothing here imports matplotlib.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_budget.measure import rises
from gpu_budget.model.figures import PhaseRecord
from gpu_budget.model.growth import ProjectionRecord, allowance_words
from gpu_budget.model.result import Result
from gpu_budget.units import format_per_step, format_size

HOST, GPU = ("ram_tree", "ram"), ("vram_allocated",)  # the verdict's metrics a panel's figure is
RANK_TITLES = {"ram_tree_peak": "host RAM per rank (peak of each rank's process tree; a budget applies to each rank)",
               "vram_allocated": "GPU memory per rank (allocated by torch; a budget applies to each rank)"}


def drawn_phases(result: Result) -> list[PhaseRecord]:
    """The phases a plot draws: the row's, and for a child stopped past every phase it closed (or before closing
    one) a last point at the peak seen so far, named "<phase> (<kind>)", else "end (<kind>)" (a row that names no
    phase: one written before Failure.phase, or one stopped before any phase began). A child that reported its own
    failure closed the phase it failed in: a peak above its phases is the parent's poll between two of them."""
    phases = list(result.phases.values())
    error, peaks = result.error, result.peaks
    if error is None or (error.reported and phases):
        return phases
    top = {"ram_tree_peak": peaks.ram_tree, "ram_peak": peaks.ram, "vram_allocated": peaks.vram_allocated}
    if not any(v is not None and all((getattr(p, k) or 0) < v for p in phases) for k, v in top.items()):
        return phases
    name = error.phase or "end"  # set where the child was stopped (isolate/forkserver.py), never read from its words
    return [*phases, PhaseRecord(name=f"{name} ({error.kind})", ram_peak=peaks.ram, ram_tree_peak=peaks.ram_tree,
                                 vram_allocated=peaks.vram_allocated, vram_reserved=peaks.vram_reserved)]


@dataclass(frozen=True)
class Line:
    """One line of a panel: its points (phase index, bytes) and its legend label."""

    xs: tuple[int, ...]
    ys: tuple[float, ...]
    label: str


def per_step(nbytes: float) -> str:
    """A growth per step as the verdict writes it (judge/growth.py)."""
    return format_per_step(nbytes)


def projection(result: Result, field: str) -> ProjectionRecord | None:
    """The verdict's growth projection of the panel's figure (`field`: a phase record's), or None."""
    record = result.growth_projection
    metrics = HOST if field in ("ram_tree_peak", "ram_peak") else GPU if field == "vram_allocated" else ()
    if record is None:
        return None
    return next((p for p in record.projections if p.metric in metrics), None)


def numbered_back(result: Result) -> bool:
    """Whether the row's step numbers go back (restarted each epoch, counted down): the rule then reads its marks in
    the order run, and names its judged steps by their place among the marks (rises.in_order)."""
    return not rises.in_order([s.step for s in result.steps])


def _over(p: ProjectionRecord, back: bool) -> str:
    """The judged steps as the verdict names them: by number, or by place among the marks where the numbers go back."""
    first, last = p.steps_fitted
    if back:
        return f"over the {_nth(first)}-{_nth(last)} marked steps (its step numbers go back: read in the order run)"
    return f"over steps {first}-{last}"


def _nth(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def growth_note(p: ProjectionRecord, back: bool = False) -> str:
    """The verdict's growth in its own words: steady within the clean allowance (or the one its entry's recorded runs
    widened it to), or the growth and its projection. `back`: the row's step numbers go back (numbered_back)."""
    over = _over(p, back) + (f", in blocks of {p.block} judged steps" if p.block > 1 else "")
    if not p.grows:
        return f"steady {over} ({per_step(p.slope)}, within {allowance_words(p.allowance, p.allowance_runs)})"
    budget = "" if p.budget is None else f" {'>' if p.breaks else 'within'} budget {format_size(p.budget)}"
    return f"grows {per_step(p.slope)} {over}: about {format_size(p.projected)} at step {p.at_step:,}{budget}"


def _marks(phases: list[PhaseRecord], back: bool) -> list[tuple[int, int]]:
    """(index in `phases`, where the verdict counts it) of each step-marked phase: its step number, or where the
    numbers go back, its mark's place among the marks (phases in a row marking one number are one mark, as
    model/figures.py steps_of reads them). Read by number, a run counted down drew its judged steps 14-19 at
    step(14)..step(19), the run's 2nd-7th marks, its line falling."""
    out, place, before = [], 0, None
    for i, ph in enumerate(phases):
        if ph.step is None:
            continue
        place += ph.step != before
        before = ph.step
        out.append((i, place if back else ph.step))
    return out


def growth_line(result: Result, phases: list[PhaseRecord], field: str) -> Line | None:
    """The judged growth drawn over the judged steps: from the figure at the window's first step, rising by the
    verdict's growth per step; None where the verdict projected none of this figure."""
    p = projection(result, field)
    if p is None:
        return None
    first, last = p.steps_fitted
    back = numbered_back(result)
    at = [(i, x) for i, x in _marks(phases, back) if first <= x <= last]
    start = next((getattr(phases[i], field) for i, x in at if x == first), None)
    if start is None:
        return None
    steps = f"the {_nth(first)}-{_nth(last)} marked steps" if back else f"steps {first}-{last}"
    label = f"judged growth {per_step(p.slope)}, {steps}" + (f" in blocks of {p.block} judged steps" if p.block > 1 else "")
    if p.grows:
        label += f"\nprojected: about {format_size(p.projected)} at step {p.at_step:,}"
    return Line(tuple(i for i, _ in at), tuple(start + p.slope * (x - first) for _, x in at), label)


def rank_lines(result: Result, phases: list[PhaseRecord], field: str) -> list[Line]:
    """A launcher case's ranks, one line each over the row's phases, labelled by rank (the worst one said)."""
    ranks = result.ranks
    if not ranks:
        return []
    worst = max(ranks, key=lambda r: r.peaks.gated_ram or 0).rank
    lines = []
    for r in ranks:
        points = [(i, getattr(r.phases[ph.name], field)) for i, ph in enumerate(phases) if ph.name in r.phases]
        points = [(i, v) for i, v in points if v is not None]
        if points:
            lines.append(Line(tuple(i for i, _ in points), tuple(v for _, v in points),
                              f"rank {r.rank}" + (" (worst)" if r.rank == worst and len(ranks) > 1 else "")))
    return lines
