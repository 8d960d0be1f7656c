"""The GitHub step summary: the gate's verdict, its table, why each failure failed, snapshots and plots, in markdown.

Rendered from the same Results and with the same table (terminal.py) as the terminal, so the two cannot disagree.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

from gpu_budget.model.hardware import Hardware
from gpu_budget.model.json_value import JsonMapping
from gpu_budget.model.result import Result, Verdict
from gpu_budget.report.markdown_text import code, inline
from gpu_budget.report.terminal import (
    SNAPSHOT_HOWTO,
    headers,
    jit_lines,
    rank_lines,
    remediation_lines,
    setup_lines,
    table_rows,
    tree_lines,
)


def run_url(environ: Mapping[str, str] = os.environ) -> str | None:
    """This GitHub Actions run's page, whose Artifacts section holds the report, plots and snapshots."""
    parts = [environ.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")]
    return "{}/{}/actions/runs/{}".format(*parts) if all(parts) else None


def _where(path: str, base: Path | None) -> str:
    """A file as the reader finds it: relative to the report's folder (the artifact's root) when inside it."""
    try:
        return str(Path(path).relative_to(base)) if base else path
    except ValueError:
        return path


def markdown_table(table: Sequence[Sequence[str]], headers: Sequence[str]) -> str:
    """A GitHub markdown table whose cells may hold '|', '<', '`' or '*' (a parametrized node id, a message): escaped
    (inline), so a cell never splits into columns of its own nor loses or restyles its text."""
    from tabulate import tabulate

    return tabulate([[inline(v) for v in row] for row in table], headers=[inline(h) for h in headers],
                    tablefmt="github")


def list_item(head: str, text: str) -> list[str]:
    """A markdown list item holding `text` as written: its first line after `head`, with '<', '>' and '&' escaped
    (GitHub's sanitiser would eat `<class 'int'>`), and the lines after it in a fenced block indented into the item,
    so a child's multi-line error neither ends the list nor turns a line into a heading, rule, quote or HTML."""
    first, *rest = text.strip("\r\n").splitlines() or [""]
    first = re.sub(r"([<>&])", r"\\\1", first)
    if not rest:
        return [f"- {head}{first}"]
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", "\n".join(rest))), default=0))
    return [f"- {head}{first}", f"  {fence}", *(f"  {line}" if line.strip() else "" for line in rest), f"  {fence}"]


STEP_SUMMARY_LIMIT = 2**20  # GitHub refuses a step's summary over 1 MiB whole ("upload aborted, supports content up
# to a size of 1024k"): a session of thousands of cases showed none of it


def markdown(rows: list[Result], hardware: JsonMapping | None, problems: list[str] = (), base: Path | None = None,
             artifacts: str | None = None, room: int = STEP_SUMMARY_LIMIT, report: Path | str | None = None,
             baselines: Sequence[str] = ()) -> str:
    """The step summary: the gate's verdict, the table, why each failure failed, snapshots and plots.

    Files are named relative to `base` (the JSON report's folder, which the
    GPU job uploads as the artifact); `artifacts` (this run's page) is where a
    reader downloads them: a step summary cannot show an artifact's files.
    One longer than `room` bytes keeps the rows that fit (the failing ones
    first, in the table's order) and says how many it left out and where every
    row is: `report`, the JSON report written, else the job's log. `baselines`: what the session wrote to the
    baseline files (report/tally), said under the table as the terminal says it.
    """
    head = _heading(rows, hardware)

    def render(kept: list[int]) -> str:
        return head + left_out(len(rows) - len(kept), len(rows), report) + _body([rows[i] for i in kept], problems,
                                                                             base, artifacts, baselines)

    return fitted(sorted(range(len(rows)), key=lambda i: not _failing(rows[i])), room, render)  # failing ones first


def fitted(order: Sequence[int], room: int, render: Callable[[list[int]], str]) -> str:
    """`render` of every index where that fits in `room` bytes, else of as many of `order`'s first ones as fit, in
    their own order; each render's size guides the next guess (a table's columns narrow as rows go)."""
    keep = len(order)
    text = render(sorted(order))
    size = len(text.encode())
    while keep and size > room:
        keep = max(0, min(keep - 1, int(keep * room / size * 0.98)))
        text = render(sorted(order[:keep]))
        size = len(text.encode())
    return text


def left_out(left: int, total: int, report: Path | str | None, what: str = "rows") -> str:
    """The line under a cut summary's heading: how many it left out, and where they all are (`report`, the JSON
    report written, else the job's log); "" where none was."""
    if not left:
        return ""
    where = f"every one is in {code(str(report))}" if report else \
        "the full table is in this job's log (--gpu-budget-json writes every one to a file)"
    return (f"\n\n> **{left} of {total} {what} left out** of this summary (GitHub shows a step summary only under 1 "
            f"MiB); {where}")


def _failing(row: Result) -> bool:
    return not row.passed or bool(row.failed_after)  # on its verdict, or its test after measure()


def _heading(rows: list[Result], hardware: JsonMapping | None) -> str:
    """The verdict of the whole session: every row counted, whatever the summary shows of them."""
    failing = [r for r in rows if _failing(r)]
    expected = sum(1 for r in failing if _xfailed(r))
    measured = [r for r in rows if _ran(r)]
    head = f"### GPU budget: {len(measured)} measured, {len(failing) - expected} failed"
    if expected:
        head += f", {expected} xfailed (expected failure{'s' if expected != 1 else ''})"
    hw = Hardware.read(hardware)
    if hw is not None:
        head += f" on `{hw.key}`"
    return head


def _body(rows: list[Result], problems: Sequence[str], base: Path | None, artifacts: str | None,
          baselines: Sequence[str] = ()) -> str:
    """Everything under the heading: the gate's problems, the table, the baselines written, the failures' reasons,
    snapshots and plots."""
    failing = [r for r in rows if _failing(r)]
    lines = [""]
    for problem in problems:
        lines += ["", f"> **Gate failed:** {inline(problem)}"]
    if rows:
        lines += ["", markdown_table(table_rows(rows), headers(rows))]
    for line in (*setup_lines(rows), *baselines):
        lines += ["", f"> {inline(line)}"]
    for row in failing:
        why = " (expected failure: its test xfailed)" if _xfailed(row) else ""
        lines += ["", *list_item(f"**{inline(row.nodeid)}**{why}: ", row.failed_after or row.message)]
    remedies = remediation_lines(rows, markdown=True)
    if remedies:
        lines += ["", remedies[0], "", *remedies[1:]]
    for section in (tree_lines(rows), rank_lines(rows), jit_lines(rows)):
        if section:
            lines += ["", f"**{section[0][0].upper()}{section[0][1:]}**", "", *(f"- {inline(line)}" for line in section[1:])]

    def files(kept: dict[str, str]) -> list[str]:  # node id -> path; shown as written, a space or ')' in it too
        if artifacts:
            return [f"- {inline(nodeid)}: {code(_where(path, base))}" for nodeid, path in kept.items()]
        return [f"- {inline(nodeid)}: [{inline(_where(path, base))}]({quote(path, safe='/')})"
                for nodeid, path in kept.items()]

    where = f" (in the [artifacts of this run]({artifacts}#artifacts))" if artifacts else ""
    snapshots = {r.nodeid: r.snapshot for r in rows if r.snapshot}
    if snapshots:
        lines += ["", f"**Memory snapshots of the failing CUDA cases**{where}: {SNAPSHOT_HOWTO}.", "",
                  *files(snapshots)]
    plotted = {r.nodeid: r.plot for r in rows if r.plot}
    if plotted:
        lines += ["", f"**Plots**{where}: host RAM and GPU memory per phase and step, with the budget and the baseline.",
                  "", *files(plotted)]
    return "\n".join(lines) + "\n"


def _ran(row: Result) -> bool:
    """Whether the heading counts the row measured: a skipped case's row ran no child (or one its skip disowns), nor
    did an error's without a measurement (an environment not made, a declaration refused), failed but not measured."""
    return row.verdict != Verdict.SKIPPED and row.measured


def _xfailed(row: Result) -> bool:
    """A row the gate failed in a test pytest xfailed (pytest.mark.xfail): pytest counts it an expected failure, not
    a failure, and the session passes, so the heading does too; its verdict cell still says the gate's word."""
    return not row.passed and row.test_outcome == "xfailed"


def append_step_summary(rows: list[Result], hardware: JsonMapping | None, problems: list[str] = (),
                        base: Path | None = None, report: Path | None = None, baselines: Sequence[str] = ()) -> None:
    """Appended to what the step wrote there before, within the room that leaves under GitHub's limit; `report`: the
    JSON report written, where every row is; `baselines`: the lines on the baseline files written."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path and (rows or problems or baselines):
        with open(path, "a") as fh:
            room = STEP_SUMMARY_LIMIT - fh.seek(0, os.SEEK_END)
            fh.write(markdown(rows, hardware, problems, base, run_url(), room=room, report=report, baselines=baselines))
