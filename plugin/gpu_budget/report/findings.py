"""FINDINGS.md from a JSON report: for every scenario, what each proposed fix does to the peak.

A fix test measures the scenario without the fix and with it, in one run
(labels on one test). A fix is judged against the same noise model as the gate:
a change inside the default tolerance is "no effect", not a win.

    python -m gpu_budget findings tiny.json [real.json ...] [gpu.json ...] -o FINDINGS.md

Several reports (e.g. the tiny gate and a real-scale run) merge into one file;
each row keeps its scale, and a row measured again in a later report (the same
node id and scale) replaces the earlier one.

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
memtest declares now, and says so (and the budget declared now, where it moved).

A row that carries sweep points (--gpu-budget-sweep) also gives its scenario
an "Across releases" table (findings_sweep.py), whatever later report
replaces the row in the tables above: the last report's sweep of a case is
shown, its figures all from that one session.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpu_budget.declare.fixes import Control
from gpu_budget.declare.marks import DEFAULT_TOLERANCE_BY_SCALE, ORIGINS, default_tolerance
from gpu_budget.declare.marks import gpu_budget as read_mark
from gpu_budget.declare.marks import merge as merge_marks
from gpu_budget.model.budget import SCALES
from gpu_budget.model.result import Result
from gpu_budget.report.findings_sweep import across_releases, sweep_table
from gpu_budget.report.json_report import READABLE_VERSIONS
from gpu_budget.units import format_size

if TYPE_CHECKING:
    from gpu_budget.report.findings_gpu import GpuReport

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


def scale_order(scale: str) -> int:
    return SCALES.index(scale) if scale in SCALES else len(SCALES)


def _skip_verdict(row: Result) -> str:
    return "needs GPU, not measured here" if "CUDA" in row.message else f"skipped: {row.message}"


def _metric(*rows: Result) -> str:
    """The gated metric the rows share: allocated GPU memory, else the process tree's RAM, else the main process's."""
    if all(r.peaks.vram_allocated is not None for r in rows):
        return "vram_allocated"
    return "ram_tree" if all(r.peaks.ram_tree is not None for r in rows) else "ram"


def _main(row: Result | None) -> int | None:
    return None if row is None else row.peaks.ram


def _reserved(row: Result | None) -> int | None:
    return None if row is None else row.peaks.vram_reserved


def not_applied(row: Result) -> str | None:
    """Why a fix of this row was not applied where it ran, as its runner reported it; None when all were.

    Runners report `info["fixes_applied"]` ({fix: "applied" or why not}); reports
    from before that contract hold the fact under the fix's own name.
    """
    info = row.info
    notes = info.get("fixes_applied") or {}
    reasons = [f"{fix}: {note}" for fix, note in notes.items() if note != "applied"]
    if not notes:
        reasons = [f"{fix}: {info[fix]}" for fix in row.fixes
                   if isinstance(info.get(fix), str) and "not applied" in info[fix]]
    return "; ".join(reasons) or None


def fix_verdict(before: int | None, after: int | None, scale: str = "tiny") -> str:
    """Judged against the gate's default tolerance at that scale (the noise measured there)."""
    tol = default_tolerance(scale)
    if before is None or after is None:
        return "not measured"
    if after < tol.floor(before):
        return "works"
    if after > tol.limit(before):
        return "makes it worse"
    return "no effect"


def pairs(results: list[Result]) -> dict[str, list[dict]]:
    """Per scenario and scale: each measured variant beside the scenario's as-reported measurement.

    The reference is the row labelled "as-reported" (measured once per session
    by the scenario's own test), else the row without fixes.
    """
    groups: dict[tuple[str, str], list[Result]] = defaultdict(list)
    for row in results:
        groups[(row.scenario, row.scale)].append(row)
    out: dict[str, list[dict]] = defaultdict(list)
    for (scenario, scale), rows in sorted(groups.items(), key=lambda kv: (kv[0][0], scale_order(kv[0][1]))):
        measured = [r for r in rows if r.verdict not in ("skipped", "error")]
        ref = next((r for r in measured if r.label == "as-reported"), None) or \
            next((r for r in measured if not r.fixes), None)
        for row in rows:
            if row is ref or row.label == "as-reported":  # the reference itself: in failures()
                continue
            entry = {"scenario": scenario, "scale": scale, "variant": row.label or ", ".join(row.fixes),
                     "fixes": list(row.fixes), "test": row.nodeid, "facts": row.info,
                     "main_before": _main(ref), "main_after": _main(row),
                     "reserved_before": _reserved(ref), "reserved_after": _reserved(row)}
            if row.verdict == "skipped":
                entry.update(before=None, after=None, metric=None, verdict=_skip_verdict(row), main_before=None, main_after=None,
                             reserved_before=None, reserved_after=None)
            elif row.verdict == "error":
                metric = _metric(row)
                entry.update(before=None, after=row.peaks.get(metric), metric=metric,
                             verdict=f"error: {row.message[:120]}")
            elif ref is None:
                metric = _metric(row)
                entry.update(before=None, after=row.peaks.get(metric), metric=metric, verdict="no as-reported run to compare")
            else:
                metric = _metric(ref, row)
                before, after = ref.peaks.get(metric), row.peaks.get(metric)
                reason = not_applied(row)
                verdict = f"not applied here ({reason})" if reason else fix_verdict(before, after, scale)
                entry.update(before=before, after=after, metric=metric, verdict=verdict)
            out[scenario].append(entry)
    return out


def failures(results: list[Result]) -> dict[str, list[dict]]:
    """Per scenario: each scale's as-reported measurement against its budget (the failure mode reproduced)."""
    out: dict[str, list[dict]] = defaultdict(list)
    for row in sorted(results, key=lambda r: scale_order(r.scale)):
        if row.label != "as-reported" or row.verdict == "error":
            continue
        if row.verdict == "skipped":
            budget = row.budget
            out[row.scenario].append({"scale": row.scale, "metric": None, "peak": None, "over": None, "growth": None,
                                         "budget": budget.get("vram") or budget.get("ram"), "verdict": _skip_verdict(row),
                                         "main": None, "row": row})
            continue
        metric = _metric(row)
        budget = row.budget.get("vram" if metric == "vram_allocated" else "ram")
        peak = row.peaks.get(metric)
        growth = row.growth
        out[row.scenario].append({
            "scale": row.scale, "metric": metric, "peak": peak, "budget": budget, "main": _main(row),
            "over": None if not budget or peak is None else (peak - budget) / budget,
            "growth": growth.get("ram_tree_per_step", growth.get("ram_per_step")) if metric == "ram_tree"
            else growth.get("ram_per_step"), "verdict": row.verdict, "row": row})
    return out


_MEMTESTS: dict[str, object] = {}


def _memtest(path: str):
    """The memtest module at `path` (relative to the working directory), imported once; None when there is none."""
    if not Path(path).is_file():
        return None
    if path not in _MEMTESTS:
        folder = str(Path(path).resolve().parent)
        sys.path.insert(0, folder)  # memtests import their scenario modules by plain name
        try:
            spec = importlib.util.spec_from_file_location(f"_declared_{Path(path).stem}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        finally:
            sys.path.remove(folder)
        _MEMTESTS[path] = module
    return _MEMTESTS[path]


def declared(row: Result) -> dict[str, Any] | None:
    """The budget and origin the row's memtest declares now, for its scale and device; None when it cannot be read.

    For rows of reports written before rows carried `budget_origin`: the memtest
    module is imported from the row's node id (relative to the working directory).
    """
    path, _, rest = row.nodeid.partition("::")
    function = rest.split("::")[0].split("[")[0]
    module = _memtest(path)
    if module is None:
        return None
    marks = [m for m in getattr(getattr(module, function, None), "pytestmark", []) if m.name == "gpu_budget"]
    if not marks:
        return None
    host = "cuda" if row.budget.get("vram") else row.device or "cpu"
    mark = read_mark(**merge_marks([(m.args, m.kwargs) for m in reversed(marks)]), scale=row.scale, host=host,
                     where=row.nodeid)
    return {"origin": mark.origin, "budget": mark.budget.vram or mark.budget.ram}


def origin_line(row: Result) -> str:
    """One scale's budget, where it comes from, and what its verdict therefore shows."""
    budget = row.budget.get("vram") or row.budget.get("ram")
    if row.budget_origin is not None:
        origin, now, suffix = row.budget_origin, budget, ""
    else:
        found = declared(row) or {"origin": None, "budget": budget}
        origin, now = found["origin"], found["budget"]
        suffix = f" (origin as `{row.nodeid.split('::')[0]}` declares it now; the run predates recorded origins"
        suffix += f", and was judged against {format_size(budget)})" if now != budget else ")"
    if now is None:
        return f"- {row.scale}: no budget{suffix}"
    size = format_size(now) + (f" ({now / 1e9:g} GB)" if origin in ("write-up", "card") else "")
    if origin is None:
        return f"- {row.scale}: {size}, origin not declared: what its verdict shows is not stated{suffix}"
    return f"- {row.scale}: {size}, {origin} ({ORIGINS[origin]}): {SHOWS[origin]}{suffix}"


def controls(results: list[Result]) -> dict[str, Control]:
    """The control fixes among the rows' fixes (Fix.control), as their memtests register them: each row's memtest
    module is imported from its node id, as `declared` does."""
    from gpu_budget.declare import fixes

    found: dict[str, Control] = {}
    for path in sorted({r.nodeid.partition("::")[0] for r in results if r.fixes}):
        _memtest(path)
    for name in sorted({name for r in results for name in r.fixes}):
        try:
            fix = fixes.get(name)
        except fixes.FixError:  # a fix of a report whose memtest is gone: no split
            continue
        if fix.control is not None:
            found[name] = fix.control
    return found


def split_lines(entries: list[dict[str, Any]], controls: dict[str, Control], where: str | None = None) -> list[str]:
    """A fix's saving split into a control's part and the rest (Fix.control), per scale where both were measured;
    `where` (a card) follows the scale when given."""
    lines = []
    for control, split in controls.items():
        fix, alone, short, rest = split.of, split.alone, split.short, split.rest
        for scale in sorted({e["scale"] for e in entries}, key=scale_order):
            by = {e["variant"]: e for e in entries if e["scale"] == scale and e["before"] and e["after"] is not None}
            if fix not in by or control not in by or by[fix]["metric"] != by[control]["metric"]:
                continue
            before, part, whole = by[fix]["before"], by[control]["after"], by[fix]["after"]
            head = f"{scale}, on {where}" if where else scale
            lines.append(f"- {head}: {fix}'s saving split ({by[fix]['metric']}): as reported {format_size(before)}; "
                         f"{alone} {format_size(part)}, saving {format_size(before - part)} ({(before - part) / before:+.1%}); "
                         f"{rest}: {fix} {format_size(whole)}, {format_size(abs(whole - part))} "
                         f"{'lower' if whole < part else 'higher'} than {short} "
                         f"(saving {(part - whole) / before:+.1%} of as reported)")
    return lines


def render(report: dict[str, Any], title: str = "Findings", sources: list[str] = (), gpu: Sequence[GpuReport] = ()) -> str:
    """FINDINGS.md from a merged report (its `hardware`, `results` (Results) and `notes`) and the GPU reports given."""
    from gpu_budget.report.findings_gpu import gpu_lines, gpu_table, pick  # it reads this module's pairs

    hw = report.get("hardware") or {}
    made = "Generated by `python -m gpu_budget findings`"
    if report["results"] or sources or not gpu:
        made += (f" from real runs on `{hw.get('key')}` "
                 f"(torch {hw.get('torch')}, transformers {hw.get('transformers')}, peft {hw.get('peft')})"
                 + (f": {', '.join(f'`{s}`' for s in sources)}." if sources else "."))
    else:
        made += " from GPU reports only."
    lines = [f"# {title}", "", made,
             ("A fix \"works\" when it lowers the peak by more than the gate's default tolerance at its scale ("
              + ", ".join(f"{scale} {tol.rel:.1%} + {format_size(tol.abs)}" for scale, tol in DEFAULT_TOLERANCE_BY_SCALE.items())
              + ", each set from the peak's spread over fresh sessions at that scale: benchmarks/RESULTS.md, section 4); "
              "inside it, \"no effect\"; a fix its "
              "runner reports it did not apply where it ran reads \"not applied here\", whatever its peak. "
              "Host RAM is judged on the process tree (`ram_tree`: the measured process with its DataLoader workers "
              "and subprocesses) where both rows hold it, else on the main process (`ram`: reports before the tree "
              "was read); the main process's own peak stands beside it."), ""]
    picked = pick(gpu)
    lines += gpu_lines(gpu, picked)
    reproduced = failures(report["results"])
    found = controls(report["results"])
    notes: dict[str, list[dict]] = defaultdict(list)
    for note in report.get("notes", []):
        notes[note["scenario"]].append(note)
    cpu = pairs(report["results"])
    swept = across_releases(report.get("swept", [r for r in report["results"] if r.sweep]))
    on_gpu = {r.scenario for g in picked for r in g.results}
    for scenario in sorted(set(cpu) | on_gpu | set(notes) | set(swept)):
        entries = cpu.get(scenario, [])
        table = gpu_table(scenario, picked) + sweep_table(swept.get(scenario, []))
        if not entries and not table and not notes.get(scenario):
            continue
        lines += [f"## {scenario}", ""]
        if not entries:  # measured alone (no variant beside an as-reported row): its notes, its GPU rows, its sweep
            lines += note_lines(notes.get(scenario, [])) + table
            continue
        if reproduced.get(scenario):
            lines += ["| as reported | metric | peak | main process | budget | over budget by | growth per step | gate verdict |",
                      "|---|---|---|---|---|---|---|---|"]
            for f in reproduced[scenario]:
                over = "-" if f["over"] is None else f"{f['over']:+.1%}"
                growth = "-" if f["growth"] is None else f"{format_size(f['growth'])}"
                lines.append(f"| {f['scale']} | {f['metric'] or '-'} | {format_size(f['peak'])} | {format_size(f['main'])} | "
                             f"{format_size(f['budget'])} | {over} | {growth} | {f['verdict']} |")
            lines += ["", "Budgets, where each comes from, and what its verdict shows:", ""]
            lines += [origin_line(f["row"]) for f in reproduced[scenario]]
            lines.append("")
        lines += ["| variant | fixes | scale | metric | as reported | with the fix | saving | verdict | main process: as reported, with the fix |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for e in entries:
            saving = "-" if not e["before"] or e["after"] is None else f"{(e['before'] - e['after']) / e['before']:+.1%}"
            main = "-" if e["main_before"] is None and e["main_after"] is None else \
                f"{format_size(e['main_before'])}, {format_size(e['main_after'])}"
            lines.append(f"| {e['variant']} | {', '.join(e['fixes']) or '-'} | {e['scale']} | {e['metric'] or '-'} | {format_size(e['before'])} "
                         f"| {format_size(e['after'])} | {saving} | {e['verdict']} | {main} |")
        lines.append("")
        split = split_lines(entries, found)
        if split:
            lines += split + [""]
        lines += note_lines(notes.get(scenario, [])) + table
    return "\n".join(lines)


def note_lines(notes: list[dict]) -> list[str]:
    """A scenario's notes (a test's measured finding that is not one case's peak), a line each."""
    return [*(f"- {note['scale']}: {note['text']} (`{note['nodeid']}`)" for note in notes), ""] if notes else []


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gpu_budget findings", description=__doc__.splitlines()[0])
    parser.add_argument("reports", type=Path, nargs="+", metavar="REPORT", help="JSON reports written by --gpu-budget-json")
    parser.add_argument("-o", "--output", type=Path, default=Path("FINDINGS.md"))
    args = parser.parse_args(argv)
    from gpu_budget.report.findings_gpu import GpuReport, is_gpu, pick  # it reads this module's pairs

    merged: dict[str, Any] = {"version": max(READABLE_VERSIONS), "results": []}
    sources: list[str] = []
    gpu: list[GpuReport] = []
    for path in args.reports:
        try:
            report = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            parser.error(f"cannot read report {path}: {exc}")
        if report.get("version") not in READABLE_VERSIONS or not isinstance(report.get("results"), list):
            parser.error(f"{path} is not a gpu-budget JSON report (version {' or '.join(map(str, READABLE_VERSIONS))})")
        try:
            results = [Result.from_json(r) for r in report["results"]]
        except ValueError as exc:
            parser.error(f"{path}: {exc}")
        if is_gpu(report):  # its rows are the GPU tables', not merged into the CPU rows
            gpu.append(GpuReport(str(path), report["hardware"], tuple(results)))
            continue
        sources.append(str(path))
        merged["hardware"] = merged.get("hardware") or report.get("hardware")
        redone = {(r.nodeid, r.scale) for r in results}  # a later report's re-run replaces a row
        merged["results"] = [r for r in merged["results"] if (r.nodeid, r.scale) not in redone] + results
        swept = {(r.nodeid, r.scale): r for r in results if r.sweep}  # kept whatever replaces the row: its own table
        merged["swept"] = [r for r in merged.get("swept", []) if (r.nodeid, r.scale) not in swept] + list(swept.values())
        renoted = {(n["nodeid"], n["scale"]) for n in report.get("notes", [])}
        merged["notes"] = [n for n in merged.get("notes", []) if (n["nodeid"], n["scale"]) not in renoted] + \
            report.get("notes", [])
    if not any(pairs(merged["results"]).values()) and not any(any(pairs(list(g.results)).values()) for g in pick(gpu)):
        # a header-only file would say nothing: say why instead, and leave any FINDINGS.md there as it is
        cases = merged["results"] + [r for g in gpu for r in g.results]
        why = "no case in the report(s)" if not cases else (
            f"{len(cases)} case(s) of scenario(s) {', '.join(sorted({r.scenario for r in cases}))}, none measured with a "
            "fix beside its scenario's run without it (each finding is a fix against that run: a test measures the "
            "scenario with and without the fix, as the memtests' fix tests do)")
        print(f"no findings in {', '.join(map(str, args.reports))}: {why}; nothing written to {args.output}", file=sys.stderr)
        return 1
    args.output.write_text(render(merged, sources=sources, gpu=gpu))
    print(f"wrote {args.output}")
    return 0
