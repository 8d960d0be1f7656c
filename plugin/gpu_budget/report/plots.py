"""One PNG per measured case: host RAM and GPU memory over its phases and steps, budget and baseline drawn in.

Drawn from the judged `Result` itself (model/result.py), so a picture shows
exactly what the table and the verdict saw. Each panel has the
measured peak of every phase (load, data, each train step, eval) as a line,
the baseline's peak of the same phase as a dashed line, the budget and the
baseline's regression limit as horizontal lines, and the train steps shaded:
a growth over steps or a spike at the first optimizer step stands out. A child stopped
inside a phase has the row's peak seen so far drawn where it stopped (plot_series.drawn_phases).
Where the verdict judged a growth (steps=), the growth it read is drawn over
the steps it judged and the title says it in the verdict's words; a launcher
case draws one line per rank (plot_series.py holds both as data).

matplotlib is imported here only, when `--gpu-budget-plots` is given (the
plots extra); importing the plugin never imports it. The object-oriented
API on an Agg canvas: no pyplot, no global backend switch.
"""

from __future__ import annotations

import io
import textwrap
from dataclasses import dataclass
from pathlib import Path

from gpu_budget.model.budget import Tolerance
from gpu_budget.model.figures import Peaks, PhaseRecord
from gpu_budget.model.hardware import Hardware
from gpu_budget.model.json_value import JsonMapping
from gpu_budget.model.result import Result
from gpu_budget.report import plot_series
from gpu_budget.report.outputs import write_whole
from gpu_budget.report.terminal import verdict_text
from gpu_budget.units import MiB, format_size

GiB = 2**30
TITLE_WIDTH = 130  # characters of a panel's title on one line at the figure's width
MAX_LABELS = 30  # phase names along x: as many as fit side by side, turned, at the figure's width


@dataclass(frozen=True)
class Panel:
    """One panel: the figure drawn, by its name in a phase record, in the baseline's phases and in the peaks; its
    title; and which budget (a Budget field) is drawn in."""

    field: str
    base_field: str
    peak_key: str
    title: str
    budget_key: str


PANELS = (
    Panel("ram_tree_peak", "ram_tree", "ram_tree", "host RAM (peak of the process tree: the measured process and its workers)", "ram"),
    Panel("vram_allocated", "vram_allocated", "vram_allocated", "GPU memory (allocated by torch)", "vram"),
)
MEASURED, BASELINE, BUDGET, LIMIT, RESERVED = "#1f77b4", "#7f7f7f", "#d62728", "#ff7f0e", "#9ecae1"
MAIN, GROWTH = "#2ca02c", "#9467bd"
RANKS = ("#1f77b4", "#17becf", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f", "#ff7f0e", "#2ca02c")  # rank 0, 1, ...
# A report or baseline from before the tree was read holds the main process only: its panel falls back to it.
FALLBACK = {"ram_tree_peak": "ram_peak", "ram_tree": "ram"}


def _value(record: PhaseRecord | Peaks | None, key: str) -> int | None:
    """A panel's figure of a phase record (by its field) or of baseline peaks (by metric), with its fallback."""
    if record is None:
        return None
    value = getattr(record, key)
    return getattr(record, FALLBACK[key]) if value is None and key in FALLBACK else value


def _label(phase: PhaseRecord) -> str:
    return f"step {phase.step}" if phase.step is not None else phase.name


def _unit(top: float) -> tuple[float, str]:
    return (GiB, "GiB") if top >= 2 * GiB else (MiB, "MiB")


def _growth(result: Result, key: str) -> str | None:
    slope = result.growth.get(f"{key}_per_step")
    if slope is None:
        return None
    back = ", its step numbers going back: read in the order run" if plot_series.numbered_back(result) else ""
    return f"growth (median rise, last 5 judged steps{back}): {'+' if slope >= 0 else '-'}{format_size(abs(slope))}/step"


@dataclass(frozen=True)
class _Figures:
    """What one panel draws: each phase's measured figure and the baseline's, the baseline's peak, the regression
    limit over it (with the tolerance that sets it), the budget, and the axis they fit on."""

    values: list[int | None]
    base_values: list[int | None]
    base_peak: int | None
    tolerance: Tolerance | None
    limit: float | None
    budget: int | None
    budget_on_axis: bool  # a far-off budget would flatten the lines: it is named in the title instead
    top: float

    @classmethod
    def of(cls, result: Result, phases: list[PhaseRecord], panel: Panel) -> _Figures:
        values = [_value(p, panel.field) for p in phases]
        baseline = result.baseline
        base_phases = baseline.phases if baseline is not None else {}
        base_values = [_value(base_phases.get(p.name), panel.base_field) for p in phases]
        base_peak = _value(baseline.peaks if baseline is not None else None, panel.peak_key)
        budget = getattr(result.budget, panel.budget_key)
        tol = result.tolerance
        limit = tol.limit(base_peak) if base_peak is not None and tol is not None else None
        data = [v for v in values + base_values if v is not None] + ([limit] if limit is not None else [])
        top = max(data) if data else 1
        on_axis = budget is not None and budget <= 2.5 * top
        return cls(values, base_values, base_peak, tol, limit, budget, on_axis, max(top, budget) if on_axis else top)


def _step_runs(phases: list[PhaseRecord]) -> list[tuple[int, int]]:
    """(first, last) index of each run of step phases in a row: a phase between two runs (a second Trainer's
    train_end and train_setup, an evaluation) is no optimizer step and is left out of the band."""
    runs: list[tuple[int, int]] = []
    for i, p in enumerate(phases):
        if p.step is None:
            continue
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


def _shade_steps(ax, phases: list[PhaseRecord]) -> None:
    """A band under each run of steps, the widest one named (a name per band would crowd a run with many evals)."""
    runs = _step_runs(phases)
    for first, last in runs:
        ax.axvspan(first - 0.5, last + 0.5, color="#f2f2f2", zorder=0)
    if runs:
        first, last = max(runs, key=lambda r: r[1] - r[0])
        ax.text((first + last) / 2, 0.98, "optimizer steps", transform=ax.get_xaxis_transform(),
                ha="center", va="top", fontsize=8, color="#666666")


def _scaled(values: list[int | None], scale: float) -> list[float | None]:
    return [None if v is None else v / scale for v in values]


def _draw_lines(ax, result: Result, phases: list[PhaseRecord], panel: Panel, f: _Figures, scale: float) -> bool:
    """The reserved, baseline, main-process and measured lines, bottom to top; whether the tree's panel was drawn."""
    xs = list(range(len(phases)))
    if panel.field == "vram_allocated" and any(p.vram_reserved is not None for p in phases):
        ax.plot(xs, _scaled([p.vram_reserved for p in phases], scale), color=RESERVED, lw=1.2,
                label="reserved by the caching\nallocator (not gated)", zorder=2)
    if any(v is not None for v in f.base_values):
        # a wide, light band under the measured line: seen even where the two coincide
        ax.plot(xs, _scaled(f.base_values, scale), color=BASELINE, lw=7, alpha=0.35, marker="o", ms=11,
                solid_capstyle="round", label=f"baseline per phase\n(recorded {result.baseline.recorded})", zorder=3)
    tree = panel.field == "ram_tree_peak" and any(p.ram_tree_peak is not None for p in phases)
    ranks = plot_series.rank_lines(result, phases, panel.field)
    for colour, line in zip(RANKS, ranks):  # a launcher case: each rank's own line, as the verdict judged each
        ax.plot(line.xs, [y / scale for y in line.ys], marker="o", color=colour, lw=2.0, ms=5, label=line.label,
                zorder=4)
    if tree and not ranks:  # the main process alone beside the tree: the gap is what the workers and subprocesses held
        ax.plot(xs, _scaled([p.ram_peak for p in phases], scale), color=MAIN, lw=1.4,
                ls="--", marker=".", label="main process alone\n(not gated)", zorder=3.5)
    if not ranks:
        ax.plot(xs, _scaled(f.values, scale), marker="o", color=MEASURED, lw=2.2, ms=6,
                label="measured peak per phase" + (" (process tree)" if tree else ""), zorder=4)
    if phases[-1].name not in result.phases and f.values[-1] is not None:  # where a died child ended
        stopped_in = result.error.phase
        kept = (f"above what was streamed of {stopped_in}" if stopped_in in result.phases else
                "its phase kept no record")  # a phase kept from the child's stream is a lower bound
        ax.plot([xs[-1]], [f.values[-1] / scale], marker="X", color=BUDGET, ms=11, ls="none", zorder=5,
                label=f"peak seen so far when the child\nended ({result.error.kind}); {kept}")
    grown = plot_series.growth_line(result, phases, panel.field if tree or panel.field != "ram_tree_peak" else "ram_peak")
    if grown is not None:  # the verdict's own growth over the steps it judged
        ax.plot(grown.xs, [y / scale for y in grown.ys], color=GROWTH, lw=1.6, ls="--", label=grown.label, zorder=4.5)
    return tree


def _draw_limits(ax, f: _Figures, scale: float) -> None:
    """The baseline's regression limit and the budget, as horizontal lines."""
    if f.limit is not None:
        ax.axhline(f.limit / scale, color=LIMIT, ls=":", lw=1.6,
                   label=f"regression limit {format_size(f.limit)}\n(baseline peak {format_size(f.base_peak)} "
                         f"+{f.tolerance.rel:.1%} +{format_size(f.tolerance.abs)})")
    if f.budget is not None and f.budget_on_axis:
        ax.axhline(f.budget / scale, color=BUDGET, lw=1.8, label=f"budget {format_size(f.budget)}")


def _title(result: Result, panel: Panel, f: _Figures, tree: bool) -> str:
    """The panel's title, by rank for a launcher case, and its notes: the growth (the verdict's, where it judged
    one), a budget far above the axis."""
    title, peak_key = panel.title, panel.peak_key
    if panel.field == "ram_tree_peak" and not tree:
        title, peak_key = "host RAM (peak RSS of the measured process)", "ram"
    if result.ranks:
        title = plot_series.RANK_TITLES.get(panel.field, title)
    judged = plot_series.projection(result, panel.field)
    back = plot_series.numbered_back(result)
    notes = [plot_series.growth_note(judged, back)] if judged is not None else [n for n in (_growth(result, peak_key),) if n]
    if f.budget is not None and not f.budget_on_axis:
        notes.append(f"budget {format_size(f.budget)}, far above this axis")
    text = title + ("  |  " + "; ".join(notes) if notes else "")
    return text if len(text) <= TITLE_WIDTH else "\n".join([title, *notes])  # a long note on its own line


def _panel(ax, result: Result, phases: list[PhaseRecord], panel: Panel) -> None:
    f = _Figures.of(result, phases, panel)
    scale, unit = _unit(f.top)
    _shade_steps(ax, phases)
    tree = _draw_lines(ax, result, phases, panel, f, scale)
    _draw_limits(ax, f, scale)
    _annotate_peak(ax, f.values, scale)
    _style_axes(ax, phases, f.top / scale, unit)
    ax.set_title(_title(result, panel, f, tree), loc="left", fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def _annotate_peak(ax, values: list, scale: float) -> None:
    """The peak's figure over its point, and a rise that stands out beside its segment."""
    present = [(i, v) for i, v in enumerate(values) if v is not None]
    if not present:
        return
    i_max, v_max = max(present, key=lambda t: t[1])
    ax.annotate(format_size(v_max), (i_max, v_max / scale), textcoords="offset points", xytext=(0, 9),
                ha="center", fontsize=9, color=MEASURED, fontweight="bold",
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85})
    # a rise from one phase to the next that stands out (a spike, the optimizer state appearing),
    # written beside its segment; an even growth is the title's growth note instead
    rises = sorted(((present[k - 1], present[k]) for k in range(1, len(present))),
                   key=lambda r: r[1][1] - r[0][1], reverse=True)
    if rises:
        (i0, v0), (i1, v1) = rises[0]
        runner_up = rises[1][1][1] - rises[1][0][1] if len(rises) > 1 else 0
        if v1 - v0 > 0.05 * v_max and v1 - v0 > 1.25 * runner_up:
            ax.annotate(f"+{format_size(v1 - v0)}", ((i0 + i1) / 2, (v0 + v1) / 2 / scale),
                        textcoords="offset points", xytext=(-6, 0), ha="right", va="center", fontsize=9,
                        color=MEASURED, bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none"})


def labelled(count: int) -> list[int]:
    """The phases named along x: each of a short run, evenly spaced ones (the first and the last among them) of a long
    one. One name per phase of a run of thousands of steps drew them over each other, a black band."""
    if count <= MAX_LABELS:
        return list(range(count))
    every = -(-(count - 1) // (MAX_LABELS - 1))
    return [*range(0, count - 1 - every // 2, every), count - 1]


def _style_axes(ax, phases: list[PhaseRecord], top: float, unit: str) -> None:
    """Phase names along x, a little room above the highest line, light grid, no top and right frame."""
    xs = labelled(len(phases))
    ax.set_xticks(xs)
    ax.set_xticklabels([_label(phases[i]) for i in xs], rotation=30 if len(xs) > 6 else 0,
                       ha="right" if len(xs) > 6 else "center", fontsize=9)
    ax.set_xlim(-0.5, len(phases) - 0.5)
    ax.set_ylim(0, top * 1.18)
    ax.set_ylabel(unit)
    ax.grid(axis="y", color="#dddddd", lw=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def write(result: Result, path: str | Path, hardware: JsonMapping | None = None) -> Path:
    """Draw `result` (a measured case, its phases) into the PNG at `path`; returns the path. Every text is drawn as
    written: a '$' in a node id, a phase's or a fix's name is no TeX (a pair would turn into math, a bad one raise)."""
    from matplotlib import rc_context

    with rc_context({"text.parse_math": False}):
        return _write(result, Path(path), hardware)


def _write(result: Result, path: Path, hardware: JsonMapping | None) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    phases = plot_series.drawn_phases(result)  # a died child's last phase too, at the peak seen so far
    if not phases:
        raise ValueError(f"{result.nodeid}: no phases to plot")
    panels = [p for p in PANELS if any(_value(ph, p.field) is not None for ph in phases)]
    fig = Figure(figsize=(12, 1.3 + 3.9 * len(panels)), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, panel in zip(axes, panels):
        _panel(ax, result, phases, panel)

    verdict = verdict_text(result)  # the table's words: a test that failed after measure() says so, in red
    passed = result.passed and not result.failed_after
    hw = Hardware.read(hardware)
    where = f"{'' if hw is None or hw.key is None else hw.key}  |  scale {result.scale}"
    fixes = ", ".join(result.fixes) or "none"
    fig.suptitle("\n".join(textwrap.wrap(result.nodeid, 110)), x=0.01, ha="left", fontsize=11, fontweight="bold")
    fig.text(0.99, 0.995, verdict, ha="right", va="top", fontsize=11, fontweight="bold",
             color="#2ca02c" if passed else BUDGET)
    axes[-1].set_xlabel(f"phase  ({where}  |  fixes: {fixes})", fontsize=9)
    png = io.BytesIO()
    fig.savefig(png, format="png")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, png.getvalue())  # a kill while writing leaves no truncated PNG that looks like a plot
    return path
