"""FINDINGS.md from a JSON report: for every scenario, what each proposed fix does to the peak.

A fix test measures the scenario without the fix and with it, in one run
(labels on one test). A fix is judged against the same noise model as the gate:
a change inside the default tolerance is "no effect", not a win.

    python -m gpu_budget findings tiny.json [real.json ...] -o FINDINGS.md

Several reports (e.g. the tiny gate and a real-scale run) merge into one file;
each row keeps its scale, and a row measured again in a later report (the same
node id and scale) replaces the earlier one.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from gpu_budget.marks import DEFAULT_TOLERANCE
from gpu_budget.scenario import SCALES
from gpu_budget.units import format_size


def _scale_order(scale: str) -> int:
    return SCALES.index(scale) if scale in SCALES else len(SCALES)


def _metric(row: dict) -> str:
    return "vram_allocated" if row["peaks"].get("vram_allocated") is not None else "ram"


def fix_verdict(before: int | None, after: int | None) -> str:
    if before is None or after is None:
        return "not measured"
    if after < DEFAULT_TOLERANCE.floor(before):
        return "works"
    if after > DEFAULT_TOLERANCE.limit(before):
        return "makes it worse"
    return "no effect"


def pairs(results: list[dict]) -> dict[str, list[dict]]:
    """Per scenario and scale: each measured variant beside the scenario's as-reported measurement.

    The reference is the row labelled "as-reported" (measured once per session
    by the scenario's own test), else the row without fixes.
    """
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in results:
        groups[(row["scenario"], row["scale"])].append(row)
    out: dict[str, list[dict]] = defaultdict(list)
    for (scenario, scale), rows in sorted(groups.items(), key=lambda kv: (kv[0][0], _scale_order(kv[0][1]))):
        measured = [r for r in rows if r["verdict"] not in ("skipped", "error")]
        ref = next((r for r in measured if r.get("label") == "as-reported"), None) or \
            next((r for r in measured if not r["fixes"]), None)
        for row in rows:
            if row is ref or row.get("label") == "as-reported":  # the reference itself: in failures()
                continue
            entry = {"scenario": scenario, "scale": scale, "variant": row.get("label") or ", ".join(row["fixes"]),
                     "fixes": row["fixes"], "test": row["nodeid"], "facts": row.get("info", {})}
            if row["verdict"] == "skipped":
                why = "needs GPU, not measured here" if "CUDA" in row["message"] else f"skipped: {row['message']}"
                entry.update(before=None, after=None, metric=None, verdict=why)
            elif row["verdict"] == "error":
                entry.update(before=None, after=row["peaks"]["ram"], metric="ram",
                             verdict=f"error: {row['message'][:120]}")
            elif ref is None:
                entry.update(before=None, after=row["peaks"]["ram"], metric="ram", verdict="no as-reported run to compare")
            else:
                metric = _metric(ref)
                before, after = ref["peaks"].get(metric), row["peaks"].get(metric)
                entry.update(before=before, after=after, metric=metric, verdict=fix_verdict(before, after))
            out[scenario].append(entry)
    return out


def failures(results: list[dict]) -> dict[str, list[dict]]:
    """Per scenario: each scale's as-reported measurement against its budget (the failure mode reproduced)."""
    out: dict[str, list[dict]] = defaultdict(list)
    for row in sorted(results, key=lambda r: _scale_order(r["scale"])):
        if row.get("label") != "as-reported" or row["verdict"] == "error":
            continue
        if row["verdict"] == "skipped":
            why = "needs GPU, not measured here" if "CUDA" in row["message"] else f"skipped: {row['message']}"
            out[row["scenario"]].append({"scale": row["scale"], "metric": None, "peak": None, "over": None, "growth": None,
                                         "budget": (row.get("budget") or {}).get("vram") or (row.get("budget") or {}).get("ram"),
                                         "verdict": why})
            continue
        metric = _metric(row)
        budget = (row.get("budget") or {}).get("vram" if metric == "vram_allocated" else "ram")
        peak = row["peaks"].get(metric)
        out[row["scenario"]].append({
            "scale": row["scale"], "metric": metric, "peak": peak, "budget": budget,
            "over": None if not budget or peak is None else (peak - budget) / budget,
            "growth": (row.get("growth") or {}).get("ram_per_step"), "verdict": row["verdict"]})
    return out


def render(report: dict, title: str = "Findings", sources: list[str] = ()) -> str:
    hw = report.get("hardware") or {}
    lines = [f"# {title}", "",
             f"Generated by `python -m gpu_budget findings` from real runs on `{hw.get('key')}` "
             f"(torch {hw.get('torch')}, transformers {hw.get('transformers')}, peft {hw.get('peft')})"
             + (f": {', '.join(f'`{s}`' for s in sources)}." if sources else "."),
             (f"A fix \"works\" when it lowers the peak by more than the gate's tolerance "
              f"({DEFAULT_TOLERANCE.rel:.1%} + {format_size(DEFAULT_TOLERANCE.abs)}); inside it, \"no effect\"."), ""]
    reproduced = failures(report["results"])
    notes: dict[str, list[dict]] = defaultdict(list)
    for note in report.get("notes", []):
        notes[note["scenario"]].append(note)
    for scenario, entries in sorted(pairs(report["results"]).items()):
        lines += [f"## {scenario}", ""]
        if reproduced.get(scenario):
            lines += ["| as reported | metric | peak | budget | over budget by | growth per step | gate verdict |",
                      "|---|---|---|---|---|---|---|"]
            for f in reproduced[scenario]:
                over = "-" if f["over"] is None else f"{f['over']:+.1%}"
                growth = "-" if f["growth"] is None else f"{format_size(f['growth'])}"
                lines.append(f"| {f['scale']} | {f['metric'] or '-'} | {format_size(f['peak'])} | {format_size(f['budget'])} | "
                             f"{over} | {growth} | {f['verdict']} |")
            lines.append("")
        lines += ["| variant | fixes | scale | metric | as reported | with the fix | saving | verdict |",
                  "|---|---|---|---|---|---|---|---|"]
        for e in entries:
            saving = "-" if not e["before"] or e["after"] is None else f"{(e['before'] - e['after']) / e['before']:+.1%}"
            lines.append(f"| {e['variant']} | {', '.join(e['fixes']) or '-'} | {e['scale']} | {e['metric'] or '-'} | {format_size(e['before'])} "
                         f"| {format_size(e['after'])} | {saving} | {e['verdict']} |")
        lines.append("")
        for note in notes.get(scenario, []):
            lines.append(f"- {note['scale']}: {note['text']} (`{note['nodeid']}`)")
        if notes.get(scenario):
            lines.append("")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gpu_budget findings", description=__doc__.splitlines()[0])
    parser.add_argument("reports", type=Path, nargs="+", metavar="REPORT", help="JSON reports written by --gpu-budget-json")
    parser.add_argument("-o", "--output", type=Path, default=Path("FINDINGS.md"))
    args = parser.parse_args(argv)
    merged: dict = {"version": 1, "results": []}
    for path in args.reports:
        try:
            report = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            parser.error(f"cannot read report {path}: {exc}")
        if report.get("version") != 1 or not isinstance(report.get("results"), list):
            parser.error(f"{path} is not a gpu-budget JSON report (version 1)")
        merged["hardware"] = merged.get("hardware") or report.get("hardware")
        redone = {(r["nodeid"], r["scale"]) for r in report["results"]}  # a later report's re-run replaces a row
        merged["results"] = [r for r in merged["results"] if (r["nodeid"], r["scale"]) not in redone] + report["results"]
        renoted = {(n["nodeid"], n["scale"]) for n in report.get("notes", [])}
        merged["notes"] = [n for n in merged.get("notes", []) if (n["nodeid"], n["scale"]) not in renoted] + \
            report.get("notes", [])
    args.output.write_text(render(merged, sources=[str(p) for p in args.reports]))
    print(f"wrote {args.output}")
    return 0
