"""A sweep side by side: per swept package, one row per case and one column per version, and the environments made.

Each cell is the case's gated host-RAM figure (and allocated VRAM where
measured) at that version, with its change against the version the case ran
at, whose cell is the gated run's own figure. A version that could not be
made or run says so in its cell and, in full, on a line below the table; so
does one whose peak breaks the case's budget (OVER BUDGET, and the breach
below): only the version the case ran at is gated, but a reader must see
which versions break the budget.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpu_budget.model.figures import Peaks
from gpu_budget.model.metric import Metric
from gpu_budget.model.result import EnvironmentRecord, Result, SweepPoint
from gpu_budget.report.order import version_order
from gpu_budget.report.text_table import tabulated
from gpu_budget.units import format_change, format_size

OVER = "OVER BUDGET"  # a cell's flag where the version's peak breaks the case's budget


def _figure(point: SweepPoint, reference: Peaks | None) -> str:
    text = _measured(point, reference)
    return f"{text} {OVER}" if point.over_budget else text


def from_zero(now: int) -> str:
    """A change from a reference of 0, where no percentage exists: "+12.00 MiB from 0 B" ("0 B, as before")."""
    return f"{format_size(now)}, as before" if not now else f"+{format_size(now)} from {format_size(0)}"


def _shown(point: SweepPoint, reference: Peaks | None, metric: str, label: str) -> str | None:
    """The metric's change in the cell: a percentage, or from a reference of 0 what it grew by (left out, it hid
    the very growth a sweep looks for)."""
    value = point.change.get(metric)
    if value is not None:
        return f"{label}{format_change(value)}"
    now = point.peaks.figure(metric) if point.peaks is not None and metric in point.change else None
    zero = reference is not None and reference.figure(metric) == 0
    return f"{label}{from_zero(now)}" if zero and now is not None else None


def _measured(point: SweepPoint, reference: Peaks | None) -> str:
    if point.status != "ok" or point.peaks is None:
        return point.status
    parts = [f"{format_size(point.peaks.gated_ram)}"]
    if point.peaks.vram_allocated is not None:
        parts.append(f"VRAM {format_size(point.peaks.vram_allocated)}")
    text = ", ".join(parts)
    if point.reference:
        return text
    ram = Metric.RAM_TREE if Metric.RAM_TREE in point.change else Metric.RAM
    shown = [_shown(point, reference, ram, ""), _shown(point, reference, Metric.VRAM_ALLOCATED, "VRAM ")]
    shown = [s for s in shown if s]
    return f"{text} ({', '.join(shown)})" if shown else text


def sweep_lines(rows: Iterable[Result]) -> list[str]:
    """The sweep's tables (one per package) and, below each, the versions that failed, named."""
    rows = [row for row in rows if row.sweep]
    packages = list(dict.fromkeys(p.package for row in rows for p in row.sweep))
    lines: list[str] = []
    for package in packages:
        points = {row.nodeid: [p for p in row.sweep if p.package == package] for row in rows}
        running = {p.version for each in points.values() for p in each if p.reference}
        versions = sorted({p.version for each in points.values() for p in each}, key=version_order)
        headers = ["test", *(f"{v} (ran at)" if v in running else v for v in versions)]
        table = []
        for nodeid, each in points.items():
            by_version = {p.version: p for p in each}
            ran = next((p for p in each if p.reference and p.status == "ok"), None)
            reference = None if ran is None else ran.peaks
            table.append([nodeid, *(_figure(by_version[v], reference) if v in by_version else "-" for v in versions)])
        lines.append(f"sweep of {package}: the gated host RAM per version, change against the version each case "
                     "ran at (gated there as usual; the others reported, OVER BUDGET where over the case's budget)")
        lines.extend(tabulated(table, headers, tablefmt="simple").splitlines())
        failed: dict[tuple[str, str, str], list[str]] = {}  # one line per version and reason, naming its cases
        for nodeid, each in points.items():
            for p in each:
                if p.status != "ok":
                    failed.setdefault((p.version, p.status, p.message), []).append(nodeid)
                if p.over_budget:
                    failed.setdefault((p.version, "over budget", "; ".join(p.over_budget)), []).append(nodeid)
        for (version, status, message), nodeids in failed.items():
            lines.append(f"{package} {version} {status} ({len(nodeids)} case(s): {', '.join(nodeids)}): {message}")
    return lines


def environment_lines(records: Iterable[EnvironmentRecord]) -> list[str]:
    """One line per environment: what it lays over the running one, the seconds it was made in, and found made; or
    the seconds failing took and why, a failure remembered from an earlier run said as such."""
    by_key: dict[tuple[str, ...], list[EnvironmentRecord]] = {}
    for record in records:
        by_key.setdefault(record.requirements, []).append(record)
    lines = []
    for requirements, each in by_key.items():
        made = [r for r in each if not r.error]
        if len(made) < len(each):
            lines.append(_failed_line(requirements, [r for r in each if r.error]))
        if not made:
            continue
        first = [r for r in made if not r.cached]
        found = [r for r in made if r.cached]
        held = f"installs {made[0].described}" if made[0].overlay else "the running environment satisfies it"
        how = [f"made in {first[0].seconds:.1f} s ({first[0].tool})"] if first else []
        if any(r.remade for r in first):
            how[-1] += ", in place of a half-made one a session cut off left"
        if found:
            how.append(f"found made {len(found)} time(s), in {max(r.seconds for r in found):.2f} s at most")
            waits = [r.waited for r in found if r.waited is not None]
            if waits:
                how[-1] += f" ({max(waits):.2f} s of it waiting while another process made it)"
        lines.append(f"environment {', '.join(requirements)} ({held}): {'; '.join(how)}")
        lines += [f"  it breaks a running package's requirement: {c}; what imports that package there may fail"
                  for c in made[0].conflicts]
    return lines


def _failed_line(requirements: tuple[str, ...], failed: list[EnvironmentRecord]) -> str:
    tried = [r for r in failed if not r.remembered and r.waited is None]
    waited = [r.waited for r in failed if r.waited is not None]
    recalled = [r.seconds for r in failed if r.remembered]
    how = [f"failed in {max(r.seconds for r in tried):.1f} s ({tried[0].tool})"] if tried else []
    if waited and tried:
        how.append(f"{len(waited)} other process(es) waited for that, {max(waited):.2f} s at most")
    elif waited:  # none of this session's tried it: a process of another session sharing the folder did
        how.append(f"another process tried it while this session waited, {max(waited):.2f} s at most")
    if recalled:
        how.append(f"failed as remembered from an earlier run, in {max(recalled):.2f} s (--gpu-budget-update "
                   "tries it again)")
    return f"environment {', '.join(requirements)} cannot be made: {'; '.join(how)}: {failed[0].error}"
