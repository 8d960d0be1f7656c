"""FINDINGS.md's "Across releases" table: a scenario's cases at each swept release, against the release they ran at.

A report made with --gpu-budget-sweep holds, on each judged row, the case
measured at every version of each swept package (SweepPoint): the reference
(the version the case ran at, its gated figure) and the others, each in an
environment laid over the running one. Per scenario, one row per case,
package and version: the gated figure, its change against the reference,
the allowance the gate judged the case with (its tolerance at the
reference's figure: the noise measured over fresh sessions, benchmarks/
RESULTS.md section 4), and whether the change is past it. A version that
could not be made or run says why in its row.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from gpu_budget.declare.marks import default_tolerance
from gpu_budget.model.metric import Metric
from gpu_budget.model.result import Result
from gpu_budget.report.findings_pairs import cell
from gpu_budget.report.order import version_order
from gpu_budget.report.row_fields import gated_metric
from gpu_budget.report.sweep_table import OVER, from_zero
from gpu_budget.units import format_change, format_size

MESSAGE_CHARS = 160  # a failed version's reason, cut to this in its row


@dataclass(frozen=True)
class Moved:
    """One version of one case against the version it ran at: the figures compared and the verdict on the change."""

    case: str
    package: str
    version: str
    reference: bool
    metric: Metric | None
    peak: int | None
    before: int | None
    allowed: float | None  # bytes either side of `before` inside the tolerance
    status: str
    message: str
    installs: str  # what its environment lays over the running one ("" for the reference)
    over_budget: tuple[str, ...] = ()  # how its peaks break the case's budget (reported, not gated)

    @property
    def change(self) -> float | None:
        if self.reference or self.peak is None or not self.before:
            return None
        return (self.peak - self.before) / self.before

    @property
    def ratio(self) -> float | None:
        """The change in bytes over the allowance (above 1: past the tolerance)."""
        if self.reference or self.peak is None or self.before is None or not self.allowed:
            return None
        return abs(self.peak - self.before) / self.allowed

    @property
    def past(self) -> bool | None:
        """Whether the change is past the tolerance (None where nothing was compared)."""
        if self.reference or self.peak is None or self.before is None or self.allowed is None:
            return None
        return abs(self.peak - self.before) > self.allowed


def moved(row: Result) -> list[Moved]:
    """The row's sweep points, each against the reference point of its package, in version order per package."""
    case = row.label or row.nodeid
    tol = row.tolerance or default_tolerance(row.scale)
    out: list[Moved] = []
    for package in dict.fromkeys(p.package for p in row.sweep):
        points = sorted((p for p in row.sweep if p.package == package), key=lambda p: version_order(p.version))
        reference = next((p for p in points if p.reference), None)
        metric = None if reference is None or reference.peaks is None else gated_metric(reference.peaks)
        # a reference that failed holds the peak so far, not the case's figure: nothing is compared against it
        before = None if metric is None or reference.status != "ok" else reference.peaks.figure(metric)
        allowed = None if before is None else before * tol.rel + tol.abs  # the gate's limit less the figure
        for p in points:
            peak = None if metric is None or p.peaks is None or p.status != "ok" else p.peaks.figure(metric)
            env = p.environment
            installs = "" if p.reference or env is None else env.described
            out.append(Moved(case, package, p.version, p.reference, metric, peak, before, allowed, p.status,
                             " ".join(p.message.split())[:MESSAGE_CHARS], installs, p.over_budget))
    return out


def across_releases(results: Iterable[Result]) -> dict[str, list[Moved]]:
    """Per scenario, every swept case's versions (rows without sweep points are left out), by scale then case."""
    out: dict[str, list[Moved]] = defaultdict(list)
    for row in sorted((r for r in results if r.sweep), key=lambda r: (r.scenario, r.scale, r.label or r.nodeid)):
        out[row.scenario] += moved(row)
    return dict(out)


def _cell(m: Moved) -> tuple[str, str, str]:
    """peak (flagged where it breaks the case's budget), change, past the tolerance."""
    if m.status != "ok":
        return f"{m.status}: {m.message}" if m.message else m.status, "-", "not measured"
    peak = format_size(m.peak) + (f" {OVER}" if m.over_budget else "")
    if m.reference:
        return peak, "ran at", "-"
    if m.past is None:
        return peak, "-", "not compared"
    # from a reference of 0 no percentage exists: what it grew by (a "-" there hid the growth the sweep looks for)
    change = from_zero(m.peak) if m.change is None else format_change(m.change, "+.2%")
    ratio = "" if m.ratio is None else f" ({m.ratio:.1f}x the allowance)"
    return peak, change, f"{'past it' if m.past else 'inside it'}{ratio}"


def sweep_table(entries: list[Moved]) -> list[str]:
    """A scenario's "Across releases" lines: the table, then what moved past the tolerance, and each environment."""
    if not entries:
        return []
    lines = [("Across releases (`--gpu-budget-sweep`: each case measured again at each version, in an environment "
             "laid over the running one, in the same session; the change is against the version it ran at, and is "
             "past the tolerance when it exceeds the allowance the gate judged the case with; a peak that breaks the "
             f"case's budget reads {OVER}, reported, not gated):"), "",
             "| case | package | version | metric | peak | change | allowed | past the tolerance |",
             "|---|---|---|---|---|---|---|---|"]
    for m in entries:
        peak, change, past = _cell(m)
        allowed = "-" if m.allowed is None or m.before is None else f"±{format_size(round(m.allowed))}" + (
            f" ({m.allowed / m.before:.2%})" if m.before else "")
        lines.append(f"| {cell(m.case)} | {m.package} | {m.version} | {m.metric or '-'} | {cell(peak)} "
                     f"| {change} | {allowed} | {past} |")
    lines.append("")
    return lines + version_lines(entries) + [""]


def _span(values: list[float], fmt: str) -> str:
    low, high = min(values), max(values)
    shown = format_change if "%" in fmt else format
    return shown(low, fmt) if low == high else f"{shown(low, fmt)} .. {shown(high, fmt)}"


def version_lines(entries: list[Moved]) -> list[str]:
    """A line per swept version (not the one the cases ran at): what it installs, how many of its cases moved past
    the tolerance and by how much, or why it was not measured."""
    groups: dict[tuple[str, str], list[Moved]] = {}
    for m in entries:
        if not m.reference:
            groups.setdefault((m.package, m.version), []).append(m)
    packages = list(dict.fromkeys(m.package for m in entries))  # as swept
    lines = []
    for (package, version), each in sorted(groups.items(), key=lambda kv: (packages.index(kv[0][0]), version_order(kv[0][1]))):
        installs = next((m.installs for m in each if m.installs), "")
        head = f"- {package} {version}" + (f" (installs {installs})" if installs else "")
        compared = [m for m in each if m.past is not None]
        parts = []
        if compared:
            past = [m for m in compared if m.past]
            moved_bytes = [m.peak - m.before for m in compared]
            by = ' .. '.join(dict.fromkeys(_signed(b) for b in (min(moved_bytes), max(moved_bytes))))
            rel = [m.change for m in compared if m.change is not None]  # none from a reference of 0
            ratios = [m.ratio for m in compared if m.ratio is not None]
            parts.append(f"{len(past)} of {len(compared)} cases past the tolerance; change "
                         + (f"{_span(rel, '+.2%')} ({by})" if rel else by)
                         + (f", {_span(ratios, '.1f')}x the allowance" if ratios else ""))
        uncompared = [m for m in each if m.status == "ok" and m.past is None]
        if uncompared:
            parts.append(f"not compared in {len(uncompared)} case(s): the version it ran at was not measured")
        over = [m for m in each if m.over_budget]
        for breach in dict.fromkeys("; ".join(m.over_budget) for m in over):
            cases = [m.case for m in over if "; ".join(m.over_budget) == breach]
            parts.append(f"over budget in {len(cases)} case(s): {breach}")
        failed = [m for m in each if m.status != "ok"]
        for message in dict.fromkeys(m.message for m in failed):
            cases = [m.case for m in failed if m.message == message]
            parts.append(f"not measured in {len(cases)} case(s): {message}")
        lines.append(f"{head}: {'; '.join(parts)}")
    return lines


def _signed(n: int) -> str:
    return f"{'+' if n >= 0 else '-'}{format_size(abs(n))}"
