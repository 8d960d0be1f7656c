"""What an --against run prints (one table: base, head, change and spread per gated figure) and writes (JSON).

The JSON holds the verdicts and, per run in the order run, its side, commit,
exit code, wall time and the run's full gate report (every row: phases, steps,
ranks), so nothing measured is lost.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpu_budget.against.pairs import Run
from gpu_budget.against.verdict import CaseVerdict, Figure, base_failed_after, card_changed, counts, params_changed
from gpu_budget.judge.failsafe import WITHOUT_ROWS
from gpu_budget.model.entry import Entry
from gpu_budget.model.json_value import JsonObject
from gpu_budget.report.outputs import write_whole
from gpu_budget.report.summary import STEP_SUMMARY_LIMIT
from gpu_budget.report.text_table import tabulated
from gpu_budget.units import format_change, format_size

JSON_VERSION = 1
HEADERS = ("test", "figure", "base", "head", "change", "spread base / head", "stored", "verdict")


@dataclass(frozen=True)
class Outcome:
    """A whole --against run: what was compared, the verdicts, the runs."""

    ref: str
    base_commit: str
    head_commit: str
    head_dirty: bool
    cases: tuple[CaseVerdict, ...]
    runs: tuple[Run, ...]
    stored: Mapping[str, Entry] = field(default_factory=dict)  # nodeid -> its stored baseline: shown, not judged

    @property
    def gate_problems(self) -> tuple[str, ...]:
        """The head sessions' fail-safe (no GPU under --gpu-budget-require-gpu, nothing measured under CI): it fails
        the run as it fails a plain gate, whatever the cases' verdicts. The base's are not the head's to fix; a test
        that failed without a row is its case's own verdict already (verdict.py), not said twice."""
        said = (p for r in self.runs if r.side == "head" for p in r.gate_problems)
        return tuple(dict.fromkeys(p for p in said if WITHOUT_ROWS not in p))

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.cases) and not self.gate_problems

    def wall(self, side: str) -> float:
        return sum(r.wall_seconds for r in self.runs if r.side == side)

    def to_json(self) -> JsonObject:
        return {"version": JSON_VERSION, "kind": "against", "ref": self.ref, "base_commit": self.base_commit,
                "head_commit": self.head_commit, "head_dirty": self.head_dirty, "passed": self.passed,
                "gate_problems": list(self.gate_problems),
                "wall_seconds": {"base": round(self.wall("base"), 3), "head": round(self.wall("head"), 3)},
                "cases": [{**c.to_json(), "stored": self._stored_json(c.nodeid)} for c in self.cases],
                "runs": [r.to_json() for r in self.runs]}

    def _stored_json(self, nodeid: str) -> JsonObject | None:
        entry = self.stored.get(nodeid)
        return None if entry is None else entry.to_json()


def _size(value: float | None) -> str:
    return "-" if value is None else format_size(round(value))


def _change(value: float | None) -> str:
    return "-" if value is None else format_change(value)


def rows(cases: Sequence[CaseVerdict], stored: Mapping[str, Entry] | None = None) -> list[tuple[str, ...]]:
    """One line per gated figure of each case (the test named on its first, with the path it had at base where its
    file was renamed), one for a case without figures; the stored baseline's figure beside the pair where one
    exists. A case measured at head only shows head's figures and `-` for base's."""
    out = []
    for case in cases:
        verdict = case.status
        entry = (stored or {}).get(case.nodeid)
        name = f"{case.nodeid} (renamed from {case.renamed_from})" if case.renamed_from else case.nodeid
        if not case.figures:
            out.append((name, "-", "-", "-", "-", "-", "-", verdict))
            continue
        for k, fig in enumerate(case.figures):
            kept = None if entry is None else _stored(entry, fig)
            out.append((name if k == 0 else "", fig.name, _size(fig.base_median), _size(fig.head_median),
                        _change(fig.change), f"{_size(fig.spread_base)} / {_size(fig.spread_head)}",
                        "-" if kept is None else format_size(kept), verdict if k == 0 else ""))
    return out


def _stored(entry: Entry, fig: Figure) -> int | None:
    """The stored baseline's figure beside the pair's: its rank's where the figure is one rank's."""
    if fig.rank is None:
        return entry.peaks.figure(fig.metric)
    peaks = entry.ranks.get(fig.rank)
    return None if peaks is None else peaks.figure(fig.metric)


def _said(case: CaseVerdict) -> bool:
    """Whether the case gets a line below the table: any verdict but a plain pass, a renamed file's pass, and a pass
    whose base test failed after measure() (verdict.base_failed_after) or that ran as on another card or with other
    params at head (its note tells the knob's change from the code's: in the JSON alone, the table's pass hid it)."""
    noted = base_failed_after(case.base) or card_changed(case.base, case.head) or params_changed(case.base, case.head)
    return case.status != "pass" or case.renamed_from is not None or bool(noted)


def text(outcome: Outcome) -> str:
    """The header, the table, one line per case that is not a plain pass, and the count of each verdict."""
    base_runs, head_runs = (sum(1 for r in outcome.runs if r.side == side) for side in ("base", "head"))
    dirty = " with uncommitted changes" if outcome.head_dirty else ""
    header = (f"gpu-budget against {outcome.ref} ({outcome.base_commit[:10]}): base {base_runs} run(s) "
              f"{outcome.wall('base'):.1f} s, head ({outcome.head_commit[:10]}{dirty}) {head_runs} run(s) "
              f"{outcome.wall('head'):.1f} s; medians shown, judged on each side's extremes")
    lines = [header, tabulated(rows(outcome.cases, outcome.stored), HEADERS)]
    lines += [f"{c.status}: {c.nodeid}: {c.message}" for c in outcome.cases if _said(c)]
    lines += [f"gate failed at head: {problem}" for problem in outcome.gate_problems]
    tally = ", ".join(f"{n} {status}" for status, n in counts(outcome.cases).items())
    lines.append(f"gpu-budget against {outcome.ref}: {tally or 'no case measured'}; "
                 f"{'passed' if outcome.passed else 'FAILED'}")
    return "\n".join(lines) + "\n"


def markdown(outcome: Outcome, room: int = STEP_SUMMARY_LIMIT, report: Path | None = None) -> str:
    """The step summary (GITHUB_STEP_SUMMARY): a heading with the verdict, the table, the reasons. One longer than
    `room` bytes keeps the cases that fit, those said below the table first, and says how many it left out and where
    they all are (`report`, the JSON report, else the job's log): GitHub refuses a summary over 1 MiB whole."""
    from gpu_budget.report.markdown_text import code, prose
    from gpu_budget.report.summary import fitted, left_out, markdown_table

    tally = ", ".join(f"{n} {status}" for status, n in counts(outcome.cases).items()) or "no case measured"
    dirty = " with uncommitted changes" if outcome.head_dirty else ""
    said = (f"Base `{outcome.base_commit[:10]}`, head `{outcome.head_commit[:10]}`{dirty}; medians shown, judged on "
            f"each side's extremes.")
    head = f"### GPU budget against `{outcome.ref}`: {'passed' if outcome.passed else 'FAILED'} ({tally})"
    problems = [f"- **gate failed at head**: {prose(problem)}" for problem in outcome.gate_problems]

    def render(kept: list[int]) -> str:
        cases = [outcome.cases[i] for i in kept]
        lines = [head + left_out(len(outcome.cases) - len(kept), len(outcome.cases), report, "cases"), "", said, "",
                 markdown_table(rows(cases, outcome.stored), HEADERS)]
        reasons = [f"- **{c.status}** {code(c.nodeid)}: {prose(c.message)}" for c in cases if _said(c)] + problems
        return "\n".join(lines + ([""] + reasons if reasons else [])) + "\n"

    return fitted(sorted(range(len(outcome.cases)), key=lambda i: not _said(outcome.cases[i])), room, render)


def append_step_summary(outcome: Outcome, report: Path | None = None) -> None:
    """Appended to what the step wrote there before, within the room that leaves under GitHub's limit."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a") as fh:
            fh.write(markdown(outcome, STEP_SUMMARY_LIMIT - fh.seek(0, os.SEEK_END), report))


def write_json(path: Path, outcome: Outcome) -> None:
    """Written atomically (a temp file of this write's own + rename), as the gate's own report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, json.dumps(outcome.to_json(), indent=2) + "\n")
