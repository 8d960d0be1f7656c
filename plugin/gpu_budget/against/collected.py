"""The modules a side's session could not collect, and the tests it failed, and why: a plugin each --against or bisect
session loads (`-p`).

Each side runs with `--continue-on-collection-errors`, so a module that does
not import at one side (a syntax error in a memtest at the base) costs its own
cases and nothing else. pytest's report says only that the module errored;
this plugin writes, per collector that failed, its node id and the error in
one line ("SyntaxError: invalid syntax (test_a.py, line 5)") as a JSON line to
the file named in COLLECT_ENV, which pairs.run_session reads back. Without
COLLECT_ENV (a session of the user's own) it does nothing.

It writes the session's rootdir to the file ROOTDIR_ENV names, and, to the
file FAILED_ENV names, each test pytest failed (in its
setup, call or teardown) with the first line of pytest's reason: a test that
fails before a case of it is measured leaves no row, and only this says it
failed (verdict.py: at head it fails, at base it is an error at base).
"""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpu_budget.model.json_value import JsonMapping, JsonObject

COLLECT_ENV = "GPU_BUDGET_AGAINST_COLLECT"  # the file each failed collector's line is appended to
FAILED_ENV = "GPU_BUDGET_AGAINST_FAILED"  # the file each failed test's line is appended to
ROOTDIR_ENV = "GPU_BUDGET_AGAINST_ROOTDIR"  # the file the session's rootdir is written to (its node ids' folder)
PLUGIN = "gpu_budget.against.collected"


def pytest_sessionstart(session: pytest.Session) -> None:
    """The rootdir, which node ids' paths are relative to: a bisect finds the case's file by it (bisect.at_commit)."""
    target = os.environ.get(ROOTDIR_ENV)
    if target:
        Path(target).write_text(str(session.config.rootpath))


def pytest_exception_interact(node, call, report) -> None:
    """A collector's exception, where pytest still holds it: its cause named with the file and line it points at."""
    if isinstance(report, pytest.CollectReport) and call.excinfo is not None:
        _write(report.nodeid, said(call.excinfo.value, node.config.rootpath))


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A failed collector pytest_exception_interact did not see: the last line of pytest's own report."""
    if report.failed and report.nodeid not in _seen:
        lines = [line.strip() for line in report.longreprtext.splitlines() if line.strip()]
        _write(report.nodeid, lines[-1].removeprefix("E").strip() if lines else "collection error")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A test pytest failed, at its first failed phase, with the first line of pytest's reason."""
    if report.failed and report.nodeid not in _failed:
        from gpu_budget.session.held import failure_line

        _failed.add(report.nodeid)
        _write(report.nodeid, failure_line(report) or f"failed in its {report.when}", FAILED_ENV)


_seen: set[str] = set()
_failed: set[str] = set()


@dataclass(frozen=True)
class Uncollected:
    """One collector that failed: its node id and the error, in one line (a line of the file COLLECT_ENV names)."""

    nodeid: str
    error: str

    def to_json(self) -> JsonObject:
        return {"nodeid": self.nodeid, "error": self.error}

    @classmethod
    def from_json(cls, data: JsonMapping) -> Uncollected:
        return cls(str(data["nodeid"]), str(data["error"]))


def _write(nodeid: str, error: str, env: str = COLLECT_ENV) -> None:
    target = os.environ.get(env)
    if not target or (env == COLLECT_ENV and nodeid in _seen):
        return
    if env == COLLECT_ENV:
        _seen.add(nodeid)
    with open(target, "a") as fh:  # one short line per append: workers of one session may share the file
        fh.write(json.dumps(Uncollected(nodeid, error).to_json()) + "\n")


def said(exc: BaseException, root: Path) -> str:
    """The error in one line: pytest's CollectError unwrapped to its cause, with the file and line inside `root`."""
    while isinstance(exc, pytest.Collector.CollectError) and exc.__cause__ is not None:
        exc = exc.__cause__
    if isinstance(exc, SyntaxError):
        where = _relative(exc.filename, root) if exc.filename else None
        return f"{type(exc).__name__}: {exc.msg}" + (f" ({where}, line {exc.lineno})" if where else "")
    text = traceback.format_exception_only(type(exc), exc)[-1].strip()
    if isinstance(exc, pytest.Collector.CollectError):  # pytest's own words, several lines: the last says most
        text = [line for line in str(exc).splitlines() if line.strip()][-1].strip() if str(exc).strip() else text
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _relative(f.filename, root)]
    if frames:
        text += f" ({_relative(frames[-1].filename, root)}, line {frames[-1].lineno})"
    return text


def _relative(filename: str, root: Path) -> str | None:
    try:
        return Path(filename).resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return None


def read(path: Path) -> Mapping[str, str]:
    """node id -> error, from a file a session wrote (none where nothing failed)."""
    out: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                entry = Uncollected.from_json(json.loads(line))
            except ValueError:
                continue
            out.setdefault(entry.nodeid, entry.error)
    return out


def holder(nodeid: str, errors: Mapping[str, str]) -> str | None:
    """The collector of `errors` that holds `nodeid` (its module, or a folder above it), or None."""
    path = nodeid.split("::")[0]
    for where in errors:
        if where in ("", ".") or path == where or path.startswith(where.rstrip("/") + "/"):
            return where
    return None
