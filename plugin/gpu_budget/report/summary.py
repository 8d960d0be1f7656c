"""The GitHub step summary: the gate's verdict, its table, why each failure failed, snapshots and plots, in markdown.

Rendered from the same Results and with the same table (terminal.py) as the terminal, so the two cannot disagree.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
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


def markdown(rows: list[Result], hardware: JsonMapping | None, problems: list[str] = (), base: Path | None = None,
             artifacts: str | None = None) -> str:
    """The step summary: the gate's verdict, the table, why each failure failed, snapshots and plots.

    Files are named relative to `base` (the JSON report's folder, which the
    GPU job uploads as the artifact); `artifacts` (this run's page) is where a
    reader downloads them: a step summary cannot show an artifact's files.
    """
    failing = [r for r in rows if not r.passed or r.failed_after]  # on its verdict, or its test after measure()
    expected = sum(1 for r in failing if _xfailed(r))
    measured = [r for r in rows if _ran(r)]
    head = f"### GPU budget: {len(measured)} measured, {len(failing) - expected} failed"
    if expected:
        head += f", {expected} xfailed (expected failure{'s' if expected != 1 else ''})"
    hw = Hardware.read(hardware)
    if hw is not None:
        head += f" on `{hw.key}`"
    lines = [head]
    for problem in problems:
        lines += ["", f"> **Gate failed:** {inline(problem)}"]
    if rows:
        lines += ["", markdown_table(table_rows(rows), headers(rows))]
    for line in setup_lines(rows):
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
                        base: Path | None = None) -> None:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path and (rows or problems):
        with open(path, "a") as fh:
            fh.write(markdown(rows, hardware, problems, base, run_url()))
