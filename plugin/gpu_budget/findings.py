"""FINDINGS.md from a JSON report: for every scenario, what each proposed fix does to the peak.

A fix test measures the scenario without the fix and with it, in one run
(labels on one test). A fix is judged against the same noise model as the gate:
a change inside the default tolerance is "no effect", not a win.

    python -m gpu_budget findings tiny.json [real.json ...] -o FINDINGS.md

Several reports (e.g. the tiny gate and a real-scale run) merge into one file;
each row keeps its scale, and a row measured again in a later report (the same
node id and scale) replaces the earlier one.

Host RAM is judged on the process tree's peak (`ram_tree`: the measured process
with its DataLoader workers and subprocesses) where both rows hold it, else on
the main process's (`ram`, all a version-1 report holds); the main process's
figure stands beside it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from gpu_budget.marks import DEFAULT_TOLERANCE_BY_SCALE, default_tolerance
from gpu_budget.report import READABLE_VERSIONS
from gpu_budget.scenario import SCALES
from gpu_budget.units import format_size


def _scale_order(scale: str) -> int:
    return SCALES.index(scale) if scale in SCALES else len(SCALES)


def _skip_verdict(row: dict) -> str:
    return "needs GPU, not measured here" if "CUDA" in row["message"] else f"skipped: {row['message']}"


def _metric(*rows: dict) -> str:
    """The gated metric the rows share: allocated GPU memory, else the process tree's RAM, else the main process's."""
    if all(r["peaks"].get("vram_allocated") is not None for r in rows):
        return "vram_allocated"
    return "ram_tree" if all(r["peaks"].get("ram_tree") is not None for r in rows) else "ram"


def _main(row: dict | None) -> int | None:
    return None if row is None else row["peaks"].get("ram")


def not_applied(row: dict) -> str | None:
    """Why a fix of this row was not applied where it ran, as its runner reported it; None when all were.

    Runners report `info["fixes_applied"]` ({fix: "applied" or why not}); reports
    from before that contract hold the fact under the fix's own name.
    """
    info = row.get("info") or {}
    notes = info.get("fixes_applied") or {}
    reasons = [f"{fix}: {note}" for fix, note in notes.items() if note != "applied"]
    if not notes:
        reasons = [f"{fix}: {info[fix]}" for fix in row["fixes"]
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
                     "fixes": row["fixes"], "test": row["nodeid"], "facts": row.get("info", {}),
                     "main_before": _main(ref), "main_after": _main(row)}
            if row["verdict"] == "skipped":
                entry.update(before=None, after=None, metric=None, verdict=_skip_verdict(row), main_before=None, main_after=None)
            elif row["verdict"] == "error":
                metric = _metric(row)
                entry.update(before=None, after=row["peaks"].get(metric), metric=metric,
                             verdict=f"error: {row['message'][:120]}")
            elif ref is None:
                metric = _metric(row)
                entry.update(before=None, after=row["peaks"].get(metric), metric=metric, verdict="no as-reported run to compare")
            else:
                metric = _metric(ref, row)
                before, after = ref["peaks"].get(metric), row["peaks"].get(metric)
                reason = not_applied(row)
                verdict = f"not applied here ({reason})" if reason else fix_verdict(before, after, scale)
                entry.update(before=before, after=after, metric=metric, verdict=verdict)
            out[scenario].append(entry)
    return out


def failures(results: list[dict]) -> dict[str, list[dict]]:
    """Per scenario: each scale's as-reported measurement against its budget (the failure mode reproduced)."""
    out: dict[str, list[dict]] = defaultdict(list)
    for row in sorted(results, key=lambda r: _scale_order(r["scale"])):
        if row.get("label") != "as-reported" or row["verdict"] == "error":
            continue
        if row["verdict"] == "skipped":
            budget = row.get("budget") or {}
            out[row["scenario"]].append({"scale": row["scale"], "metric": None, "peak": None, "over": None, "growth": None,
                                         "budget": budget.get("vram") or budget.get("ram"), "verdict": _skip_verdict(row),
                                         "main": None})
            continue
        metric = _metric(row)
        budget = (row.get("budget") or {}).get("vram" if metric == "vram_allocated" else "ram")
        peak = row["peaks"].get(metric)
        growth = row.get("growth") or {}
        out[row["scenario"]].append({
            "scale": row["scale"], "metric": metric, "peak": peak, "budget": budget, "main": _main(row),
            "over": None if not budget or peak is None else (peak - budget) / budget,
            "growth": growth.get("ram_tree_per_step", growth.get("ram_per_step")) if metric == "ram_tree"
            else growth.get("ram_per_step"), "verdict": row["verdict"]})
    return out


def render(report: dict, title: str = "Findings", sources: list[str] = ()) -> str:
    hw = report.get("hardware") or {}
    lines = [f"# {title}", "",
             f"Generated by `python -m gpu_budget findings` from real runs on `{hw.get('key')}` "
             f"(torch {hw.get('torch')}, transformers {hw.get('transformers')}, peft {hw.get('peft')})"
             + (f": {', '.join(f'`{s}`' for s in sources)}." if sources else "."),
             (f"A fix \"works\" when it lowers the peak by more than the gate's default tolerance at its scale ("
              + ", ".join(f"{scale} {tol.rel:.1%} + {format_size(tol.abs)}" for scale, tol in DEFAULT_TOLERANCE_BY_SCALE.items())
              + f", each set from the peak's spread over fresh sessions at that scale: benchmarks/RESULTS.md, section 4); "
              f"inside it, \"no effect\"; a fix its "
              f"runner reports it did not apply where it ran reads \"not applied here\", whatever its peak. "
              f"Host RAM is judged on the process tree (`ram_tree`: the measured process with its DataLoader workers "
              f"and subprocesses) where both rows hold it, else on the main process (`ram`: reports before the tree "
              f"was read); the main process's own peak stands beside it."), ""]
    reproduced = failures(report["results"])
    notes: dict[str, list[dict]] = defaultdict(list)
    for note in report.get("notes", []):
        notes[note["scenario"]].append(note)
    for scenario, entries in sorted(pairs(report["results"]).items()):
        lines += [f"## {scenario}", ""]
        if reproduced.get(scenario):
            lines += ["| as reported | metric | peak | main process | budget | over budget by | growth per step | gate verdict |",
                      "|---|---|---|---|---|---|---|---|"]
            for f in reproduced[scenario]:
                over = "-" if f["over"] is None else f"{f['over']:+.1%}"
                growth = "-" if f["growth"] is None else f"{format_size(f['growth'])}"
                lines.append(f"| {f['scale']} | {f['metric'] or '-'} | {format_size(f['peak'])} | {format_size(f['main'])} | "
                             f"{format_size(f['budget'])} | {over} | {growth} | {f['verdict']} |")
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
    merged: dict = {"version": max(READABLE_VERSIONS), "results": []}
    for path in args.reports:
        try:
            report = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            parser.error(f"cannot read report {path}: {exc}")
        if report.get("version") not in READABLE_VERSIONS or not isinstance(report.get("results"), list):
            parser.error(f"{path} is not a gpu-budget JSON report (version {' or '.join(map(str, READABLE_VERSIONS))})")
        merged["hardware"] = merged.get("hardware") or report.get("hardware")
        redone = {(r["nodeid"], r["scale"]) for r in report["results"]}  # a later report's re-run replaces a row
        merged["results"] = [r for r in merged["results"] if (r["nodeid"], r["scale"]) not in redone] + report["results"]
        renoted = {(n["nodeid"], n["scale"]) for n in report.get("notes", [])}
        merged["notes"] = [n for n in merged.get("notes", []) if (n["nodeid"], n["scale"]) not in renoted] + \
            report.get("notes", [])
    args.output.write_text(render(merged, sources=[str(p) for p in args.reports]))
    print(f"wrote {args.output}")
    return 0
