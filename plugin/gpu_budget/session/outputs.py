"""Everything a session shows at its end, rendered from its SessionData: terminal, plots, JSON, step summary.

A serial run and an xdist controller (after merging its workers' data) call
the same two functions, so an output never depends on how the tests ran.
Rendering lives in report/ (terminal.py, summary.py, json_report.py, plots.py) and explore.py
(an exploration's lines); this module decides what goes where.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from gpu_budget.isolate.forkserver import DEFAULT_PRELOAD
from gpu_budget.judge import failsafe, fingerprint
from gpu_budget.measure.host import NOT_IMPORTED
from gpu_budget.model.hardware import Hardware
from gpu_budget.model.json_value import JsonMapping
from gpu_budget.report import artifacts, json_report, legend, summary, sweep_table, tally, terminal
from gpu_budget.session.data import Explored, SessionData
from gpu_budget.session.options import Options
from gpu_budget.session.shared_gpus import shared_gpu_lines
from gpu_budget.units import format_size

JSON_UNWRITTEN = "could not write the JSON report to"  # a gate problem: the terminal then names no report file


def baseline_lines(data: SessionData, options: Options, written: Mapping[str, int]) -> list[str | None]:
    """What the session did to the baseline files (report/tally): recorded or wrote, dropped, kept, withheld."""
    here = Path.cwd()
    new, unchanged = tally.written_kinds(data.rows) if options.update else (0, 0)
    return [tally.written_line(written, options.update, here, new), tally.unchanged_line(unchanged),
            tally.dropped_line(data.dropped, here), tally.kept_line(data.kept, here),
            tally.withheld_line(data.withheld, options.update)]


def write_files(data: SessionData, options: Options, problems: list[str], git: JsonMapping | None = None,
                interrupted: str | None = None, entries: Mapping[str, int] | None = None) -> None:
    """Plots (attached to their rows), the JSON report and the GitHub step summary; a failure lands in `problems`.
    `git`: the commit measured and whether the tree was dirty, read at the session's start (report.revision). Called
    by a gated session that ran its tests only: one without the gate, or only listing (--collect-only, --setup-plan,
    ...), leaves the last gate's. An `interrupted` session's reports (`interrupted`: why, session/stopped.py) say, as a
    problem, CI or not, that they hold only the tests that reported before it stopped. `entries`: those written per
    baseline file, said in the step summary as in the terminal (which -p no:terminal leaves out)."""
    if interrupted:
        problems.append(failsafe.interrupted(data.selected, data.rows, interrupted))
    hardware = None if data.hardware is None else data.hardware.to_json()
    if options.plots and data.rows:
        _plot(data, options.plots, problems, hardware)
    written = None
    if options.json:
        try:
            json_report.write_json(options.json, data.rows, hardware, problems, [n.to_json() for n in data.notes],
                                   [e.to_json() for e in data.explorations],
                                   data.environments, git=git)
        except OSError as exc:  # the gate fails naming the file; the verdicts still reach the terminal
            problems.append(f"{JSON_UNWRITTEN} {options.json}: {exc.strerror or exc}")
        else:
            written = options.json
    base = options.json.parent if options.json else options.plots
    try:
        summary.append_step_summary(data.rows, hardware, problems, base=base, report=written,
                                    baselines=[line for line in baseline_lines(data, options, entries or {}) if line])
    except OSError as exc:
        where = os.environ.get("GITHUB_STEP_SUMMARY")
        problems.append(f"could not append the step summary to {where} (GITHUB_STEP_SUMMARY): {exc.strerror or exc}")


def _plot(data: SessionData, folder: Path, problems: list[str], hardware: JsonMapping | None) -> None:
    from gpu_budget.report import plot_series, plots

    drawn = [row.nodeid for row in data.rows if plot_series.drawn_phases(row)]  # a child timed out in its first phase too
    names = artifacts.file_names(drawn)
    unwritten: list[OSError] = []  # the folder's: named once, as every case's plot fails alike (no folder, a full disk)
    for i, row in enumerate(data.rows):
        if row.nodeid in names:
            path = folder / f"{names[row.nodeid]}.png"
            try:
                plots.write(row, path, hardware)
            except OSError as exc:
                unwritten.append(exc)
            except Exception as exc:  # noqa: BLE001  a broken picture must not hide the verdicts
                problems.append(f"plotting {row.nodeid} failed: {exc!r}")
            else:
                data.rows[i] = row.but(plot=str(path))
    if unwritten:
        count = f"{len(unwritten)} plot{'s' if len(unwritten) != 1 else ''} not written"
        problems.append(f"could not write the plots to {folder}: {unwritten[0].strerror or unwritten[0]} ({count})")


def terminal_summary(terminalreporter: pytest.TerminalReporter, data: SessionData, options: Options, problems: list[str],
                     warnings: list[str], pinned_gpu: str | None, written: Mapping[str, int] | None = None,
                     asked_stop: Sequence[str] = (), moved: str | None = None) -> None:
    """The gpu-budget section (hardware, setup, the table, remediation, failures, a stop at a failure that -x or --sw
    asked for (session/stopped.py), the baselines `written` per file and those withheld, the skips) and the
    explorations' section."""
    _explorations(terminalreporter, data.explorations)
    if not (data.rows or problems or warnings):
        return
    shown: list[str] = []  # the section's lines, for the legend of the words they use

    def write(line: str, **markup: bool) -> None:
        shown.append(line)
        terminalreporter.write_line(line, **markup)

    terminalreporter.section("gpu-budget")
    if data.hardware is not None:
        for line in hardware_lines(data.hardware, data.ran_functions):
            write(line)
    for line in terminal.setup_lines(data.rows):
        write(line)
    if pinned_gpu is not None:
        write(f"serial run on a host with several GPUs: measured on one, "
              f"CUDA_VISIBLE_DEVICES={pinned_gpu} (set it yourself to choose another)")
    for line in shared_gpu_lines(data.rows):
        write(line, yellow=True)
    if data.rows:
        write(terminal.terminal_table(data.rows))
    for line in (terminal.remediation_lines(data.rows) + terminal.tree_lines(data.rows)
                 + terminal.rank_lines(data.rows) + terminal.jit_lines(data.rows)
                 + sweep_table.sweep_lines(data.rows) + sweep_table.environment_lines(data.environments)):
        write(line)
    for line in terminal.message_lines(data.rows):
        write(line)
    for problem in problems:
        write(f"gpu-budget gate FAILED: {problem}", red=True)
    for warning in warnings:
        write(f"gpu-budget warning: {warning} (fails the run under CI or with --gpu-budget-require-gpu)", yellow=True)
    said = baseline_lines(data, options, written or {})
    for line in (*asked_stop, *said[:-1], moved, said[-1], _skipped(terminalreporter, data)):  # withheld last
        if line:
            write(line, yellow=line.startswith("gpu-budget warning"))
    if options.plots and any(r.plot for r in data.rows):
        write(f"plots: {options.plots}")
    if options.json and not any(problem.startswith(JSON_UNWRITTEN) for problem in problems):
        write(f"JSON report: {options.json}")
    for line in legend.lines(shown):
        terminalreporter.write_line(line)


def is_installed(module: str) -> bool:
    """Whether `module`'s top-level package can be found here, without importing it."""
    return importlib.util.find_spec(module.split(".")[0]) is not None


def hardware_lines(hw: Hardware, ran_functions: bool, installed: Callable[[str], bool] = is_installed) -> list[str]:
    """The section's first lines: the hardware key and the libraries installed, the children's setup, libraries they
    compiled from source, a preload module that failed to import. A library that is not installed is left out; so is a module of the default preload
    list that is not installed (a project without transformers preloads none, which moves no figure it gates)."""
    lines = [f"hardware {hw.key}: {hw.libraries + ', ' if hw.libraries else ''}python {hw.python}",
             (f"setup: {hw.cpu} ({hw.cpu_level}), kernels {hw.isa or 'not read'} (dispatch {hw.dispatch}), {hw.threads} thread(s) "
              f"per child, malloc {hw.malloc}, import floor {format_size(hw.floor)}")]
    compiled = fingerprint.compiled_line(hw.facts)
    lines += [compiled] if compiled else []
    failed = [name.removesuffix(NOT_IMPORTED) for name in hw.preload.split() if name.endswith(NOT_IMPORTED)]
    failed = [name for name in failed if name not in DEFAULT_PRELOAD or installed(name)]
    if failed and ran_functions:  # only a function case's child is forked from the forkserver
        lines.append(f"preload: {', '.join(failed)} failed to import in the forkserver (run `python -c 'import "
                     f"{failed[0]}'` to see why): the children import it themselves, so the import floor is lower "
                     f"and the host RAM figures are not those of a session that preloads it")
    return lines


def _skipped(terminalreporter: pytest.TerminalReporter, data: SessionData) -> str | None:
    """The budget tests' skips grouped by why, from pytest's reports (a probe or an exploration leaves no row)."""
    budget_tests = set(data.order)
    reasons = [report.longrepr[2] for report in terminalreporter.getreports("skipped")
               if report.nodeid in budget_tests and isinstance(report.longrepr, tuple)]
    return tally.skipped_line(reasons)


def _explorations(terminalreporter: pytest.TerminalReporter, explorations: list[Explored]) -> None:
    if not explorations:
        return
    terminalreporter.section("gpu-budget exploration")
    for found in explorations:
        terminalreporter.write_line(found.nodeid)
        for line in found.exploration.summary():
            terminalreporter.write_line(f"  {line}")
