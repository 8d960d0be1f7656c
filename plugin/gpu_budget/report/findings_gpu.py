"""FINDINGS.md's GPU tables: which GPU report shows each card, scale and scenario, and the rows read from it.

A report whose hardware names a GPU is not merged into the CPU rows (findings.py):
its rows become the scenario's table "On a GPU", judged on the allocated peak
with the reserved peak beside, each row naming its card. For each card
(`hardware.key`, and the card whose cap its rows ran under, `card=`: a run capped
to a smaller card's memory is that card's run, not the host's) and scale, `pick` shows the report that measured the most cases
on CUDA at that scale (the later path on a tie), for every scenario it holds
there; a scenario it lacks at that scale, and that another report compares
with its as-reported run there, comes from the report that measured the most of
that scenario's cases (so one real-scale part's report per scenario). A report
holds no date or commit, so "newest" cannot be read from it; these counts are
read from the reports alone, and do not depend on the order they are given in.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from gpu_budget.model.hardware import Hardware
from gpu_budget.model.json_value import JsonMapping
from gpu_budget.model.metric import Metric
from gpu_budget.model.result import Result, Verdict
from gpu_budget.report.findings_pairs import Pair, bounded_saving, cell, died_of_memory, pairs, split_lines
from gpu_budget.report.findings_variants import variant_lines
from gpu_budget.report.memtests import controls
from gpu_budget.report.order import scale_order
from gpu_budget.report.reports import Report
from gpu_budget.units import format_size

# what an as-reported run's line names of its GPU figures, each against the budget
GPU_FIGURES = (("allocated", Metric.VRAM_ALLOCATED), ("reserved", Metric.VRAM_RESERVED), ("NVML", Metric.VRAM_DEVICE))


@dataclass(frozen=True)
class GpuReport:
    """A JSON report made on a GPU host: where it lies, the hardware fingerprint it was made under, its rows.

    scope: what of the report a pick shows ("" the whole; "tiny scale"; "real scale, s4_wrap_order").
    cap: the card (`card=`) whose memory its rows' allocator was capped to, as a row names it; "" uncapped.
    """

    path: str
    hardware: Hardware
    results: tuple[Result, ...]
    scope: str = ""
    cap: str = ""

    @property
    def card(self) -> str:
        if not self.cap:
            return self.hardware.card
        name, rest = self.hardware.card.split(", ", 1)
        return f"{name} capped to {self.cap}, {rest}"

    @property
    def measured(self) -> int:
        """How many of its cases were measured on CUDA: an allocated peak, and no error."""
        return sum(_on_cuda(r) for r in self.results)

    @property
    def compared(self) -> set[str]:
        """The scenarios of which it compares a measured fix with a measured as-reported run."""
        return {scenario for scenario, entries in pairs(list(self.results)).items()
                if any(e.compared and not e.knobs for e in entries)}

    def narrowed(self, keep: Callable[[Result], bool], scope: str) -> GpuReport:
        return replace(self, results=tuple(r for r in self.results if keep(r)), scope=scope)


def _on_cuda(row: Result) -> bool:
    return row.peaks.vram_allocated is not None and row.verdict not in (Verdict.ERROR, Verdict.SKIPPED)


def is_gpu(report: Report | JsonMapping) -> bool:
    """Whether a report (or its JSON, read as one) was made on a GPU host (its hardware names the GPU)."""
    return (report if isinstance(report, Report) else Report.from_json(report)).on_gpu


def _best(found: Sequence[GpuReport]) -> GpuReport:
    return max(found, key=lambda r: (r.measured, r.path))


def pick(reports: Sequence[GpuReport]) -> list[GpuReport]:
    """Per card (the host's, or the one its rows were capped to) and scale, in key, cap and scale order: the report with the most cases on CUDA there, narrowed to that
    scale; then, for each scenario it does not compare there, the report that compares it with the most of its cases
    on CUDA, narrowed to that scenario. The order the reports are given in does not change the pick."""
    by: dict[tuple[str, str, str], list[GpuReport]] = defaultdict(list)
    for report in reports:
        for scale, cap in {(r.scale, r.card or "") for r in report.results if _on_cuda(r)}:
            narrowed = report.narrowed(lambda r, scale=scale, cap=cap: r.scale == scale and (r.card or "") == cap,
                                       f"{scale} scale")
            by[(str(report.hardware.key), cap, scale)].append(replace(narrowed, cap=cap))
    picked: list[GpuReport] = []
    for (_, _, scale), found in sorted(by.items(), key=lambda kv: (kv[0][:2], scale_order(kv[0][2]))):
        main = _best(found)
        picked.append(main)
        compares = {f.path: f.compared for f in found}  # each report's pairs, read once
        for scenario in sorted(set().union(*compares.values()) - compares[main.path]):
            picked.append(_best([f.narrowed(lambda r, s=scenario: r.scenario == s, f"{scale} scale, {scenario}")
                                 for f in found if scenario in compares[f.path]]))
    return picked


def gpu_lines(gpu: Sequence[GpuReport], picked: Sequence[GpuReport]) -> list[str]:
    """The header's paragraph on the GPU rows: which report each card's come from (`picked`, pick(gpu)), which were
    passed over, the scale."""
    if not picked:
        return []
    chosen = {r.path for r in picked}
    passed = sorted(r.path for r in gpu if r.path not in chosen)
    scales = sorted({r.scale for g in picked for r in g.results if r.verdict != Verdict.SKIPPED}, key=scale_order)
    line = ("GPU rows (each scenario's table \"On a GPU\") come from one report per card and scale: of the reports "
            "given for a card, the one that measured the most cases on CUDA at that scale (the later path in sort "
            "order on a tie), and for a scenario it does not compare there, the report that compares it with the most "
            "of its cases: "
            + "; ".join(f"`{g.path}` for {g.card}, {g.scope} ({g.measured} cases on CUDA)" for g in picked) + ". "
            + (f"Given and passed over: {', '.join(f'`{p}`' for p in passed)}. " if passed else "")
            + ("Every GPU figure here is tiny scale: none of them measures a write-up's real-scale claim. "
               if scales == ["tiny"] else f"GPU figures at scale {', '.join(scales)}; each row names its own. ")
            + "A GPU row is judged on the allocated peak (the gate's GPU metric), with the reserved peak beside it; "
              "two cards' rows of one case are not a comparison of cards, since each report ran the memtests of its "
              "own day. A CPU row that reads \"needs GPU, not measured here\" is measured in its scenario's GPU "
              "table where a GPU report holds it.")
    return [line, ""]


def as_reported_lines(report: GpuReport, scenario: str) -> list[str]:
    """The scenario's as-reported run on the card against its declared GPU budget: the figures and the test's outcome."""
    lines = []
    for row in report.results:
        budget = row.budget.vram
        if row.scenario != scenario or row.label != "as-reported" or not budget or not _on_cuda(row):
            continue
        p = row.peaks
        figures = ", ".join(f"{name} {format_size(p.figure(key))} ({'over' if p.figure(key) > budget else 'under'})"
                            for name, key in GPU_FIGURES if p.figure(key) is not None)
        outcome = test_words(row)
        died = (f"died of out-of-memory ({row.measurement.error.message.split(': ')[0]}), holding "
                if died_of_memory(row) and row.measurement and row.measurement.error else "")
        lines.append(f"- {row.scale}, as reported on {report.card}: {died}{figures} against the budget {format_size(budget)} "
                     f"({budget / 1e9:g} GB, origin {row.budget_origin or '-'}); verdict {row.verdict}, {outcome}")
    return lines


def test_words(row: Result) -> str:
    """How the row's test ended: pytest's word where the row holds it (the gate may pass a case whose test then failed
    after measure(), skipped or xfailed), else the gate's (a report from before rows held pytest's outcome)."""
    if not row.passed:
        why = row.message.split(";")[0]
        return f"the test xfailed (an expected failure): {why}" if row.test_outcome == "xfailed" else \
            f"the test failed: {why}"
    if row.test_failed:
        ended = "had an error" if row.test_outcome == "error" else "failed"
        return f"the gate passed it, but the test {ended}{' after measure()' if row.failed_after else ''}: " \
               f"{row.test_failure or 'pytest reports why'}"
    if row.test_outcome in ("skipped", "xfailed", "xpassed"):
        return f"the gate passed it, the test {row.test_outcome}"
    return "the test passed"


def gpu_table(scenario: str, picked: Sequence[GpuReport]) -> list[str]:
    """A scenario's GPU table: each pick's (pick()) fixes against its own as-reported run, the card named in each row."""
    rows: list[tuple[str, Pair]] = []
    split: list[str] = []
    reported: list[str] = []
    for report in picked:
        entries = pairs(list(report.results)).get(scenario, [])
        rows += [(report.card, e) for e in entries]
        split += split_lines(entries, controls(list(report.results)), where=report.card)
        if entries:
            reported += as_reported_lines(report, scenario)
    if not rows:
        return []
    scales = sorted({e.scale for _, e in rows}, key=scale_order)
    lines = [f"On a GPU ({', '.join(scales)} scale; the card, its driver and libraries in each row):", ""]
    fixes = [(card, e) for card, e in rows if not e.knobs]
    if fixes:
        lines += [("| card | variant | fixes | scale | metric | as reported | with the fix | saving | verdict "
                   "| reserved: as reported, with the fix (saving) |"),
                  "|---|---|---|---|---|---|---|---|---|---|", *(_gpu_row(card, e) for card, e in fixes), ""]
    lines += variant_lines([(card, e) for card, e in rows if e.knobs])
    return lines + (split + [""] if split else []) + (reported + [""] if reported else [])


def _gpu_row(card: str, e: Pair) -> str:
    """One fix on one card: the allocated peak compared, the reserved peak beside it."""
    before, after = e.reserved_before, e.reserved_after
    compared = e.metric == Metric.VRAM_ALLOCATED and e.before and before and after is not None
    saved = bounded_saving(before, after, e.before_died, e.after_died) if e.applied else "-"  # as Pair.saving
    reserved = "-" if not compared else f"{format_size(before)}, {format_size(after)} ({saved})"
    return (f"| {cell(card)} | {cell(e.variant)} | {cell(', '.join(e.fixes) or '-')} | {e.scale} | {e.metric or '-'} "
            f"| {e.as_reported} | {e.with_fix} | {e.saving} | {cell(e.verdict)} | {reserved} |")
