"""FINDINGS.md from a JSON report: for every scenario, what each proposed fix does to the peak.

A fix test measures the scenario without the fix and with it, in one run
(labels on one test). A fix is judged against the same noise model as the gate:
a change inside the default tolerance is "no effect", not a win. A case that ran
other params than the as-reported run (not set by a fix) is a variant, shown
apart (findings_variants.py).

    python -m gpu_budget findings tiny.json [real.json ...] [gpu.json ...] -o FINDINGS.md

Several reports (e.g. the tiny gate and a real-scale run) merge into one file;
each row keeps its scale, and a row measured again in a later report (the same
node id and scale) replaces the earlier one. They must come from one machine and
library set (the header names the first's): a fix of one report may be judged
against another's as-reported run, so a report from another is refused.

A report whose hardware names a GPU (`hardware.gpu_name`) is not merged: its
rows become the scenario's GPU table ("On a GPU"), each row naming its card
(findings_gpu.py says which report each table is read from). The CPU rows stay
what the other reports make of them, byte for byte.

Host RAM is judged on the process tree's peak (`ram_tree`: the measured process
with its DataLoader workers and subprocesses) where both rows hold it, else on
the main process's (`ram`, all a version-1 report holds); the main process's
figure stands beside it.

Each scale's budget is printed with its origin (marks.ORIGINS: the write-up's
figure, a card's memory, a measured gap...) and what an over-budget verdict
therefore shows. A row carries the origin its memtest declared (`budget_origin`);
a row from a report written before that key existed takes the origin its
memtest declares now, and says so (and the budget declared now, where it moved);
a row whose memtest declared none then (`budget_origin: null`) says so, whatever
it declares now.

A row that carries sweep points (--gpu-budget-sweep) also gives its scenario
an "Across releases" table (findings_sweep.py), whatever later report
replaces the row in the tables above: the last report's sweep of a case is
shown, its figures all from that one session.
"""


from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpu_budget.declare.fixes import ADDED_HERE, Control, Fix
from gpu_budget.declare.marks import DEFAULT_TOLERANCE_BY_SCALE, ORIGINS
from gpu_budget.model.hardware import Hardware
from gpu_budget.model.metric import Metric
from gpu_budget.model.result import Note, Result, Verdict
from gpu_budget.report.findings_gpu import GpuReport, gpu_lines, gpu_table, pick
from gpu_budget.report.findings_pairs import AS_REPORTED, Pair, cell, died_of_memory, fix_verdict, held_cell, pairs, skip_verdict, split_lines
from gpu_budget.report.findings_sweep import across_releases, sweep_table
from gpu_budget.report.findings_variants import variant_lines
from gpu_budget.report.markdown_text import code, inline, prose
from gpu_budget.report.memtests import Declared, controls, declared, registered
from gpu_budget.report.order import scale_order
from gpu_budget.report.outputs import unwritable, write_whole
from gpu_budget.report.reports import NotAReport, Report
from gpu_budget.report.row_fields import gated_metric, growth_of
from gpu_budget.units import format_change, format_size

__all__ = ["SHOWS", "Merged", "Reproduced", "failures", "fix_verdict", "main", "note_lines", "origin_line", "pairs", "render",
           "split_lines"]

NOTE_CHARS = 2000  # of a note's text in FINDINGS.md; the JSON report keeps it whole

# What breaking a budget shows, by where the budget comes from.
SHOWS = {
    "write-up": "over budget reproduces the reported failure against the write-up's own limit",
    "card": "over budget reproduces the failure against the memory of the write-up's card",
    "measured-gap": "over budget shows only that the fix's saving crosses a gap placed between two measured peaks, "
                    "not that the reported failure is reproduced independently of the measurement",
    "measured-main": "over budget shows that the process tree outgrows what the main process alone measured plus the "
                     "allowance (the workers' copies), not a figure from the write-up",
    "chosen": "over budget shows only that the peak is above a hand-set figure; no limit from the write-up is reproduced",
}

TOLERANCE_NOTE = (
    "A fix \"works\" when it lowers the peak by more than the tolerance the gate judged its case with: the one its "
    "marker declares (`tolerance=`), else the gate's default at its scale ("
    + ", ".join(f"{scale} {tol.rel:.1%} + {format_size(tol.abs)}" for scale, tol in DEFAULT_TOLERANCE_BY_SCALE.items())
    + ", each set from the peak's spread over fresh sessions at that scale: benchmarks/RESULTS.md, section 4), or "
    "by more than the gate allows for the spread of fresh runs a baseline of either case stored, where that is wider; "
    "inside it, \"no effect\", its saving \"within noise (±X)\", X that allowance, not a figure finer than the runs "
    "tell; a fix its "
    "runner reports it did not apply where it ran reads \"not applied here\", whatever its peak. "
    "Host RAM is judged on the process tree (`ram_tree`: the measured process with its DataLoader workers "
    "and subprocesses) where both rows hold it, else on the main process (`ram`: reports before the tree "
    "was read); the main process's own peak stands beside it.")


@dataclass(frozen=True)
class Reproduced:
    """A scenario's as-reported run at one scale against its budget: the failure mode it reproduces.

    metric: the gated metric (None where the run was not measured here);
    budget: that metric's budget (or the declared one, unmeasured); main: the
    main process's RAM; over: how far the peak is over the budget (a fraction);
    growth: the gated metric's growth per step.
    """

    row: Result
    verdict: str
    metric: Metric | None = None
    peak: int | None = None
    budget: int | None = None
    main: int | None = None
    over: float | None = None
    growth: float | None = None

    @property
    def line(self) -> str:
        """Its row of the scenario's "as reported" table."""
        over = "-" if self.over is None else format_change(self.over)
        growth = "-" if self.growth is None else f"{format_size(self.growth)}"
        died = died_of_memory(self.row)  # what it held when it died: a lower bound of its peak
        return (f"| {self.row.scale} | {self.metric or '-'} | {held_cell(self.peak, died)} | {held_cell(self.main, died)} | "
                f"{format_size(self.budget)} | {over} | {growth} | {cell(self.verdict)} |")


def _reproduced(row: Result) -> Reproduced:
    budget = row.budget
    if row.verdict == Verdict.SKIPPED:
        return Reproduced(row, skip_verdict(row), budget=budget.vram or budget.ram)
    metric = gated_metric(row.peaks)
    limit = budget.vram if metric == Metric.VRAM_ALLOCATED else budget.ram
    peak = row.peaks.figure(metric)
    growth = growth_of(row, Metric.RAM_TREE, Metric.RAM) if metric == Metric.RAM_TREE else growth_of(row, Metric.RAM)
    over = None if not limit or peak is None else (peak - limit) / limit
    return Reproduced(row, row.verdict, metric, peak, limit, row.peaks.ram, over, growth)


def failures(results: Sequence[Result]) -> dict[str, list[Reproduced]]:
    """Per scenario: each scale's as-reported measurement against its budget (the failure mode reproduced)."""
    out: dict[str, list[Reproduced]] = defaultdict(list)
    for row in sorted(results, key=lambda r: scale_order(r.scale)):
        if row.label == AS_REPORTED and row.verdict != Verdict.ERROR:
            out[row.scenario].append(_reproduced(row))
    return out


def origin_line(row: Result) -> str:
    """One scale's budget, where it comes from, and what its verdict therefore shows."""
    declared_then = row.budget
    budget = declared_then.vram or declared_then.ram
    if row.origin_recorded:  # the origin its mark declared then, None included
        origin, now, suffix = row.budget_origin, budget, ""
    else:
        found = declared(row) or Declared(None, budget)
        origin, now = found.origin, found.budget
        suffix = f" (origin as `{row.nodeid.split('::')[0]}` declares it now; the run predates recorded origins"
        suffix += f", and was judged against {format_size(budget)})" if now != budget else ")"
        if origin is None:  # declared neither then nor now: nothing dates the row, its own budget stands
            now, suffix = budget, ""
    if now is None:
        return f"- {row.scale}: no budget{suffix}"
    size = format_size(now) + (f" ({now / 1e9:g} GB)" if origin in ("write-up", "card") else "")
    if origin is None:
        return f"- {row.scale}: {size}, origin not declared: what its verdict shows is not stated{suffix}"
    return f"- {row.scale}: {size}, {origin} ({ORIGINS[origin]}): {SHOWS[origin]}{suffix}"


@dataclass(frozen=True)
class Merged:
    """The CPU reports given, merged in order: the first hardware given and, per node id and scale, the latest
    report's row, sweep (kept whatever later report replaces its row) and notes."""

    hardware: Hardware | None = None
    results: tuple[Result, ...] = ()
    swept: tuple[Result, ...] = ()
    notes: tuple[Note, ...] = ()

    def plus(self, report: Report) -> Merged:
        redone = {(r.nodeid, r.scale) for r in report.results}  # a later report's re-run replaces a row
        swept = {(r.nodeid, r.scale): r for r in report.results if r.sweep}
        renoted = {(n.nodeid, n.scale) for n in report.notes}
        return Merged(self.hardware or report.hardware,
                      tuple(r for r in self.results if (r.nodeid, r.scale) not in redone) + report.results,
                      tuple(r for r in self.swept if (r.nodeid, r.scale) not in swept) + tuple(swept.values()),
                      tuple(n for n in self.notes if (n.nodeid, n.scale) not in renoted) + report.notes)


def _made(merged: Merged, sources: Sequence[str], gpu: Sequence[GpuReport]) -> str:
    """The header's line on what the file was made from."""
    made = "Generated by `python -m gpu_budget findings`"
    if not (merged.results or sources or not gpu):
        return made + " from GPU reports only."
    hw = merged.hardware or Hardware()
    return made + (f" from real runs on `{hw.key}`" + (f" ({hw.libraries})" if hw.libraries else "")
                   + (f": {', '.join(f'`{s}`' for s in sources)}." if sources else "."))


def _reproduced_table(reproduced: list[Reproduced]) -> list[str]:
    """The scenario's as-reported runs against their budgets, and where each budget comes from."""
    return ["| as reported | metric | peak | main process | budget | over budget by | growth per step | gate verdict |",
            "|---|---|---|---|---|---|---|---|", *(f.line for f in reproduced),
            "", "Budgets, where each comes from, and what its verdict shows:", "",
            *(origin_line(f.row) for f in reproduced), ""]


def _pair_line(e: Pair) -> str:
    return (f"| {cell(e.variant)} | {cell(', '.join(e.fixes) or '-')} | {e.scale} | {e.metric or '-'} | {e.as_reported} "
            f"| {e.with_fix} | {e.saving} | {cell(e.verdict)} | {e.main} |")


def _pairs_table(entries: list[Pair]) -> list[str]:
    """The scenario's fixes, each against its as-reported run."""
    return ["| variant | fixes | scale | metric | as reported | with the fix | saving | verdict | main process: as reported, with the fix |",
            "|---|---|---|---|---|---|---|---|---|", *(_pair_line(e) for e in entries), ""]


def _said(fix: Fix) -> str:
    """A fix as FINDINGS.md describes it: whose it is (the write-ups that proposed it, or this project), then its doc."""
    who = [p for p in fix.proposed_by if p != ADDED_HERE]
    by = [f"{'proposed by' if fix.remedy else 'from'} {', '.join(who)}"] if who else []
    by += ["added by this project"] if ADDED_HERE in fix.proposed_by else []
    return f"({'; '.join(by)}) {fix.doc}" if by else fix.doc


def _fix_docs(entries: list[Pair], docs: dict[str, str]) -> list[str]:
    """What each fix in the table does, in the fix library's words (where a fix departs from what its write-up
    proposed, the library says so: the verdict above is of the fix as it ran)."""
    named = sorted({name for e in entries for name in e.fixes if name in docs})
    if not named:
        return []
    return ["What each fix does, as it ran (the fix library's words), and whose it is:", "",
            *(f"- {cell(name)}: {cell(docs[name])}" for name in named), ""]


def _scenario_lines(scenario: str, entries: list[Pair], reproduced: list[Reproduced], notes: list[Note],
                    table: list[str], found: dict[str, Control], docs: dict[str, str]) -> list[str]:
    """A scenario's section: its failure modes, its fixes, the savings split, its notes, then its GPU and sweep
    tables (`table`); nothing where it has none of them."""
    if not entries and not table and not notes:
        return []
    lines = [f"## {inline(scenario)}", ""]
    if not entries:  # measured alone (no variant beside an as-reported row): its notes, its GPU rows, its sweep
        return lines + note_lines(notes) + table
    if reproduced:
        lines += _reproduced_table(reproduced)
    fixes = [e for e in entries if not e.knobs]
    lines += (_pairs_table(fixes) if fixes else []) + variant_lines([(None, e) for e in entries if e.knobs])
    lines += _fix_docs(entries, docs)
    split = split_lines(fixes, found)
    if split:
        lines += split + [""]
    return lines + note_lines(notes) + table


def render(merged: Merged, title: str = "Findings", sources: Sequence[str] = (), gpu: Sequence[GpuReport] = (),
           problems: Sequence[tuple[str, str]] = ()) -> str:
    """FINDINGS.md from the merged CPU reports (their hardware, rows, sweeps and notes) and the GPU reports given;
    `problems`: (report, problem) where a report's session's gate failed (an interrupted one holds part of its cases)."""
    picked = pick(gpu)
    partial = [f"> **`{source}`, a partial report:** its session's gate failed: {prose(problem)}." for source, problem in problems]
    lines = [f"# {title}", "", _made(merged, sources, gpu), TOLERANCE_NOTE, "", *(f"{line}\n" for line in partial),
             *gpu_lines(gpu, picked)]
    results = list(merged.results)
    reproduced = failures(results)
    found = controls(results)
    docs = {name: _said(fix) for name, fix in registered(results).items()}
    notes: dict[str, list[Note]] = defaultdict(list)
    for note in merged.notes:
        notes[note.scenario].append(note)
    cpu = pairs(results)
    swept = across_releases(merged.swept)
    on_gpu = {r.scenario for g in picked for r in g.results}
    for scenario in sorted(set(cpu) | on_gpu | set(notes) | set(swept)):
        table = gpu_table(scenario, picked) + sweep_table(swept.get(scenario, []))
        lines += _scenario_lines(scenario, cpu.get(scenario, []), reproduced.get(scenario, []), notes.get(scenario, []),
                                 table, found, docs)
    return "\n".join(lines)


def note_lines(notes: Sequence[Note]) -> list[str]:
    """A scenario's notes (a test's measured finding that is not one case's peak), a line each."""
    return [*(f"- {note.scale}: {prose(_note_text(note.text))} ({code(note.nodeid)})" for note in notes), ""] if notes else []


def _note_text(text: str) -> str:
    """A note's text up to NOTE_CHARS, saying how much more the JSON report holds: a note of a megabyte (a search's
    whole history) was one line of a megabyte here."""
    if len(text) <= NOTE_CHARS:
        return text
    return f"{text[:NOTE_CHARS]} ... ({len(text) - NOTE_CHARS:,} more characters in the JSON report's notes)"


def _read(parser: argparse.ArgumentParser, path: Path) -> Report:
    """The report at `path`; a file that is none ends the command with the parser's error."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        parser.error(f"cannot read report {path}: {exc}")
    except UnicodeDecodeError as exc:
        parser.error(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}): not a JSON report")
    try:
        return Report.from_json(data)
    except NotAReport as exc:
        parser.error(f"{path} {exc}")
    except ValueError as exc:
        parser.error(f"{path}: {exc}")


def _nothing_found(merged: Merged, gpu: Sequence[GpuReport]) -> str | None:
    """Why the reports hold no finding (no fix measured beside its scenario's run, no sweep); None where they hold one."""
    if any(pairs(list(merged.results)).values()) or any(any(pairs(list(g.results)).values()) for g in pick(gpu)):
        return None
    if merged.swept:  # a case measured across releases: its "Across releases" table is the finding
        return None
    cases = [*merged.results, *(r for g in gpu for r in g.results)]
    return "no case in the report(s)" if not cases else (
        f"{len(cases)} case(s) of scenario(s) {', '.join(sorted({r.scenario for r in cases}))}, none measured with a "
        "fix beside its scenario's run without it (each finding is a fix against that run: a test measures the "
        "scenario with and without the fix, as the memtests' fix tests do), nor swept across releases "
        "(--gpu-budget-sweep)")


def _said_machine(hw: Hardware) -> str:
    return f"`{hw.key}`" + (f" ({hw.libraries})" if hw.libraries else "")


def _other_machine(machines: Mapping[str, Hardware], path: Path, hardware: Hardware | None) -> str | None:
    """Why the CPU report at `path` cannot merge with those before it (`machines`: each one's hardware), or None: it
    was measured on another machine or library set than the first (the header names that one alone, and a fix of one
    report would be judged against an as-reported run of the other). A report naming no hardware (version 1) merges."""
    source, first = next(iter(machines.items()), (None, None))
    if not (first and hardware and (hardware.key or hardware.libraries)) or _said_machine(first) == _said_machine(hardware):
        return None
    return (f"{path} was measured on {_said_machine(hardware)}, {source} on {_said_machine(first)}: a fix is "
            "judged against its scenario's as-reported run from any of the reports merged, so they must come from one "
            "machine and library set (write one FINDINGS.md per machine; a GPU report's rows stay its own)")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu_budget findings", description=__doc__.splitlines()[0])
    parser.add_argument("reports", type=Path, nargs="+", metavar="REPORT", help="JSON reports written by --gpu-budget-json")
    parser.add_argument("-o", "--output", type=Path, default=Path("FINDINGS.md"),
                        help="the page to write (default FINDINGS.md); an input report is refused")
    args = parser.parse_args(argv)
    refused = unwritable(args.output, [("an input", path) for path in args.reports])
    if refused is not None:
        parser.error(f"-o {args.output}: {refused}")
    merged, sources, gpu, problems = Merged(), [], [], []
    machines: dict[str, Hardware] = {}
    for path in args.reports:
        report = _read(parser, path)
        problems += [(str(path), problem) for problem in report.problems]
        if report.on_gpu:  # its rows are the GPU tables', not merged into the CPU rows
            gpu.append(GpuReport(str(path), report.hardware, report.results))
            continue
        mixed = _other_machine(machines, path, report.hardware)
        if mixed:
            parser.error(mixed)
        if report.hardware is not None and (report.hardware.key or report.hardware.libraries):
            machines.setdefault(str(path), report.hardware)
        sources.append(str(path))
        merged = merged.plus(report)
    why = _nothing_found(merged, gpu)
    if why is not None:  # a header-only file would say nothing: say why instead, and leave any FINDINGS.md there as it is
        print(f"no findings in {', '.join(map(str, args.reports))}: {why}; nothing written to {args.output}", file=sys.stderr)
        return 1
    try:
        write_whole(args.output, render(merged, sources=sources, gpu=gpu, problems=problems))
    except OSError as exc:
        print(f"python -m gpu_budget findings: error: -o {args.output}: {exc.strerror or exc}; left as it was",
              file=sys.stderr)
        return 1
    for source, problem in problems:  # its rows are what the session measured before it failed: said where they are read
        print(f"python -m gpu_budget findings: {source}: its session's gate failed: {problem}", file=sys.stderr)
    print(f"wrote {args.output}")
    return 0
