"""Fresh pytest sessions of both sides, interleaved: base, head, then a pair more of the undecided cases alone.

Each run is a plain `python -m pytest` of the user's own arguments (the
selection, -n, -k, ...) with the gate on, in the side's folder: the worktree
of REF for the base, the user's working tree for the head. pytest itself is the
engine: collection, the marks, the budgets, the measured children and the JSON
report are the gate's own, unchanged. Each run adds:

- `--gpu-budget-json=<temp file>`: its full report, read back as typed rows;
- `--gpu-budget-baselines=<an empty temp folder>` and `--gpu-budget-update`: no
  stored baseline judges a run (and none is required under CI); a budget still does;
- `--gpu-budget-record-runs=1`: each session records its cases once, whatever the
  ini file says (the pairs are the repetition);
- `--continue-on-collection-errors` and `-p gpu_budget.against.collected`: a
  module that cannot be collected at one side costs its own cases only, and the
  run says which modules and why (collected.py);
- `-p gpu_budget.against.narrow`: a later run of a side measures only the
  undecided cases it is handed (narrow.py), the rest deselected;
- `-o gpu_budget_against=` and GPU_BUDGET_AGAINST_SIDE in the environment: the
  run measures once and hands over to nothing;
- `-p no:randomly` unless the user's arguments name randomly: both sides run their
  cases in the same order;
- no GITHUB_STEP_SUMMARY: the comparison writes one summary (render.markdown), the
  sessions none.

A run's session is its own process group; on Ctrl-C, SIGTERM or any error it
is sent SIGINT (pytest's own clean end: its measured children are ended by the
gate) and, after GRACE seconds, SIGKILL. The invoking process is a subreaper
(`adopt_orphans`) while the runs last, so whatever a session leaves behind,
a measured child in a process group of its own included, re-parents to it and
is killed after each run (isolate/lifecycle.py): no process outlives the run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpu_budget.against import collected, narrow
from gpu_budget.against.worktree import AgainstError
from gpu_budget.isolate.lifecycle import adopt, become_subreaper, kill_descendants
from gpu_budget.model.json_value import JsonMapping, JsonObject
from gpu_budget.model.result import Result

SIDE_ENV = "GPU_BUDGET_AGAINST_SIDE"  # set in each run's environment: that session measures, it does not hand over
GRACE = 10.0  # seconds a session has to end on SIGINT before its process group is killed
FINISHED = (0, 1, 5)  # pytest's exit codes of a session that ran to its end: passed, failed, nothing collected
TAIL = 3000  # characters of a failed session's output quoted in the error


@dataclass(frozen=True)
class Side:
    """One side: its name ("base" or "head"), the commit, the folder its sessions start in, and what their environment
    sets besides the inherited one (None: removes; tree_paths.session_env: the base's, pointed into the worktree)."""

    name: str
    commit: str
    folder: Path
    env: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class SessionReport:
    """A side's session's JSON report, read once: its rows, the hardware key it measured under (where its stored
    baselines would be), and the report whole, which the pair's report keeps."""

    rows: tuple[Result, ...]
    hardware_key: str | None
    data: JsonMapping
    gate_problems: tuple[str, ...] = ()  # the session's fail-safe: what failed it beyond its rows

    @classmethod
    def from_json(cls, data: JsonMapping) -> SessionReport:
        hardware = data.get("hardware") or {}
        return cls(tuple(Result.from_json(row) for row in data.get("results") or ()), hardware.get("key"), data,
                   tuple(str(p) for p in data.get("gate_problems") or ()))


@dataclass(frozen=True)
class Run:
    """One session of one side: its place in the order, its exit code, its wall time, its rows and its full report
    (and the hardware key that report names)."""

    side: str
    index: int  # 1-based, per side
    commit: str
    exitcode: int
    wall_seconds: float
    rows: tuple[Result, ...]
    report: JsonMapping
    uncollected: Mapping[str, str] = field(default_factory=dict)  # collector node id -> why it could not be collected
    hardware_key: str | None = None
    failed: Mapping[str, str] = field(default_factory=dict)  # test node id -> why pytest failed it (collected.py)
    gate_problems: tuple[str, ...] = ()  # its session's fail-safe (SessionReport.gate_problems)

    def to_json(self) -> JsonObject:
        return {"side": self.side, "index": self.index, "commit": self.commit, "exitcode": self.exitcode,
                "wall_seconds": round(self.wall_seconds, 3), "uncollected": dict(self.uncollected),
                "failed_tests": dict(self.failed), "report": self.report}


def session_args(user_args: Sequence[str], report: Path, baselines: Path) -> list[str]:
    """The run's pytest arguments: the user's, then the gate's own for this run."""
    args = [*user_args, "--gpu-budget", "--gpu-budget-update", f"--gpu-budget-json={report}",
            f"--gpu-budget-baselines={baselines}", "--gpu-budget-record-runs=1", "-o", "gpu_budget_against=",
            "--continue-on-collection-errors", "-p", collected.PLUGIN, "-p", narrow.PLUGIN]
    if not any("randomly" in arg for arg in user_args):
        args += ["-p", "no:randomly"]
    return args


def run_session(side: Side, index: int, user_args: Sequence[str], scratch: Path, log=print,
                only: Sequence[str] | None = None) -> Run:
    """One fresh pytest session of `side`, waited for; its process group ended if anything interrupts the wait.
    `only`: the node ids of the tests it runs (narrow.py), the rest of the selection deselected; None: all of it."""
    report = scratch / f"{side.name}-{index}.json"
    baselines = scratch / f"baselines-{side.name}-{index}"
    output = scratch / f"{side.name}-{index}.log"
    errors_file = scratch / f"{side.name}-{index}.uncollected.jsonl"
    failed_file = scratch / f"{side.name}-{index}.failed.jsonl"
    baselines.mkdir(parents=True, exist_ok=True)
    # the step summary is the comparison's (render.markdown), not each session's; side.env's None: a variable removed
    env = {key: value for key, value in {**os.environ, SIDE_ENV: side.name, collected.COLLECT_ENV: str(errors_file),
           collected.FAILED_ENV: str(failed_file), collected.ROOTDIR_ENV: str(rootdir_path(scratch, side.name, index)),
           **side.env}.items() if value is not None and key != "GITHUB_STEP_SUMMARY"}
    if only is not None:
        chosen = scratch / f"{side.name}-{index}.only"
        chosen.write_text("".join(f"{nodeid}\n" for nodeid in only))
        env[narrow.ONLY_ENV] = str(chosen)
    if not side.folder.is_dir():  # a folder this commit does not hold: no session to run (a bisect's skip)
        raise AgainstError(f"the {side.name} session at {side.commit[:10]}: {side.folder} is not in that commit")
    command = [sys.executable, "-m", "pytest", *session_args(user_args, report, baselines)]
    start = time.monotonic()
    with output.open("w") as sink:
        process = subprocess.Popen(command, cwd=side.folder, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code = process.wait()
        except BaseException:
            end_group(process)
            raise
        finally:
            left = kill_descendants(os.getpid())
    wall = time.monotonic() - start
    if left:
        log(f"gpu-budget against: ended {len(left)} process(es) the {side.name} session left running")
    if code not in FINISHED or not report.is_file():
        said = output.read_text(errors="replace")
        crash = fatal(said) if code < 0 else ""
        raise AgainstError(f"the {side.name} session at {side.commit[:10]} (in {side.folder}) ended with "
                           f"{ended(code)}{'' if report.is_file() else ' and no report'}{crash}; its output ends:\n"
                           f"{said[-TAIL:]}")
    read = SessionReport.from_json(json.loads(report.read_text()))
    rows = read.rows
    uncollected = collected.read(errors_file)
    errors = f", {len(uncollected)} module(s) not collected" if uncollected else ""
    log(f"gpu-budget against: {side.name} run {index} ({side.commit[:10]}): {len(rows)} case(s){errors}, exit {code}, "
        f"{wall:.1f} s")
    return Run(side.name, index, side.commit, code, wall, rows, read.data, uncollected, read.hardware_key,
               collected.read(failed_file), read.gate_problems)


def rootdir_path(scratch: Path, side: str, index: int) -> Path:
    """The file a side's run writes its pytest rootdir to (collected.ROOTDIR_ENV)."""
    return scratch / f"{side}-{index}.rootdir"


def ended(code: int) -> str:
    """A session's end in words: its exit code, or the signal that killed it (a crash in the pytest process itself:
    an extension module's segfault at import, an abort)."""
    if code >= 0:
        return f"exit code {code}"
    try:
        return f"signal {signal.Signals(-code).name} (killed)"
    except ValueError:
        return f"signal {-code} (killed)"


def fatal(output: str) -> str:
    """Where Python's fault handler wrote a crash ("Fatal Python error: ..." and the stack, innermost frame first),
    the error and the frame it happened in, as ": <error> | <frame>"; else "". Its stack runs down through pytest's
    own frames, so the end of the output alone would not say where."""
    lines = output.splitlines()
    at = next((k for k, line in enumerate(lines) if line.startswith("Fatal Python error")), None)
    if at is None:
        return ""
    current = next((k for k in range(at, len(lines)) if lines[k].startswith("Current thread")), at)
    frame = next((line.strip() for line in lines[current + 1:] if line.strip().startswith("File ")), "")
    return f": {lines[at].strip()}" + (f" | {frame}" if frame else "")


def adopt_orphans() -> bool:
    """Make this process a subreaper: a session's orphans re-parent to it, to be found and ended after the run; and
    their owner: a side's session ends with this process if it is killed (lifecycle.end_with)."""
    adopt()
    return become_subreaper()


def end_group(process: subprocess.Popen) -> None:
    """The session's process group ended: SIGINT, then SIGKILL after GRACE seconds."""
    for sig, wait in ((signal.SIGINT, GRACE), (signal.SIGKILL, GRACE)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGINT:  # pytest ended; whatever it left in its group goes too
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return
