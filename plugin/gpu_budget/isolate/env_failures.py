"""Environments that could not be made, remembered across sessions so that a later one does not try again.

A requirement set that fails to resolve or install can cost a minute each
time (transformers 4.20.0 needs tokenizers 0.12.1, which has no wheel for
Python 3.11: the installer downloads and fails to build it), and nothing
changes between sessions by itself. So the failure is kept under the
environments' folder, `failed/<key>.json`: its kind, the tool's key line,
the whole message and how long the attempt took. The key is the requirement
set (order and duplicates aside), the interpreter, the tool and the index
settings it read (index_settings.py: a mirror that lacks a version says
nothing of another index): a changed requirement, or another index, is a new
key, and is tried; a replayed failure names the index it failed under. `--gpu-budget-update` tries each
failure remembered from an earlier session again (`retry`). One remembered
since this session began (`since`) is another process's of this session, an
xdist worker's that tried while this one waited: raised as it was, the same
message, so the cases it fails read alike.

Only "resolve" and "install" failures are kept: "torch" is a check of the
running torch against a kept resolution (instant), and "tool" is this
host's (uv or pip missing). One whose tool could not reach the index
(`unreachable`: a connection refused, a name that does not resolve, a
timeout, an index or proxy answering with a server error), ran past its own timeout (environment.py TOOL_TIMEOUT: a
slow index or network), was killed by a signal (the OOM killer, a cancelled job), or wrote
to a file system that is full or read-only (`no_room`), is kept for its
session alone (`passing`): an outage says nothing of the
requirements, and the next session tries again; but the xdist workers
waiting on the lock meanwhile raise it, instead of each trying the index in
turn (minutes each where it times out: pip tries 6 times, PIP_DEFAULT_TIMEOUT
each). An entry is written atomically (a temporary file
renamed over it). One that cannot be read (edited by hand, cut off by a full
disk) counts as absent, and the set is tried again and the entry written
anew: a lost entry costs one attempt and never a wrong result, where an
error would stop the case over a cache file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpu_budget.isolate.index_settings import described, redact
from gpu_budget.model.json_value import JsonMapping, JsonObject
from gpu_budget.model.result import EnvironmentRecord

FOLDER = "failed"
KEPT_KINDS = ("resolve", "install")
# what uv (its causes) and pip (its retry warnings, which its error line leaves out) say when the index is out of reach
UNREACHABLE = ("error sending request", "tcp connect error", "dns error", "failed to lookup address",
               "newconnectionerror", "connecttimeouterror", "readtimeouterror", "max retries exceeded",
               "temporary failure in name resolution", "name or service not known", "connection refused",
               "connection reset", "network is unreachable", "could not fetch url",
               # uv's words for an index (or the proxy before it) answering with an error of its own: a mirror down
               # (502, 503), a proxy asking for credentials; pip says nothing of a status below -vv
               "http status server error", "proxy authentication required")
# what uv and pip say where a file system they write is full or read-only (the environments folder, their cache, a
# temporary folder): the disk's fault, not the requirements'
NO_ROOM = ("no space left on device", "disk quota exceeded", "read-only file system")
NOT_KEPT = "the index could not be reached: not remembered, the next session tries again"
NOT_KEPT_NO_ROOM = "a file system it writes is full or read-only: not remembered, the next session tries again"
NOT_KEPT_KILLED = "the tool was killed: not remembered, the next session tries again"
NOT_KEPT_TIMED_OUT = "the tool ran out of time: not remembered, the next session tries again"
_UV_CAUSE = ("├─▶", "╰─▶")  # uv's chain of causes under its "×" line


class EnvironmentFailed(Exception):
    """An environment that cannot be made: kind "resolve", "install", "torch", "tool" or "folder"
    (the environments folder cannot be written); the message names why.

    error: the tool's key line (the message where there is none). seconds: what failing took this time (set by
    Memory). remembered: read from an earlier session's attempt, not tried in this one. by_another: another process
    of this session tried, and this one waited `seconds` for its failure. tool: the tool's name. passing: the tool
    could not reach the index, ran out of time, or was killed by a signal (not remembered: it says nothing of the
    requirements).
    """

    def __init__(self, kind: str, message: str, error: str = "", seconds: float = 0.0, remembered: bool = False,
                 tool: str = "", by_another: bool = False, passing: bool = False) -> None:
        super().__init__(message)
        self.kind, self.error, self.seconds, self.tool = kind, error or message, seconds, tool
        self.remembered, self.by_another, self.passing = remembered, by_another, passing

    def record(self, requirements: Sequence[str]) -> EnvironmentRecord:
        """The failure as the JSON report's "environments" lists it (waited: all of it, where another tried)."""
        return EnvironmentRecord(tuple(requirements), {}, {}, "", self.tool, self.seconds, False, "",
                                 waited=self.seconds if self.by_another else None, error=self.error,
                                 remembered=self.remembered)


@dataclass(frozen=True)
class FailedEntry:
    """One remembered failure: what was asked, why it failed, how long the attempt took and when (time.time())."""

    requirements: tuple[str, ...]
    kind: str
    error: str  # the tool's key line
    message: str  # the whole message, as it was raised
    seconds: float
    at: float
    python: str
    tool: str
    index: tuple[str, ...] = ()  # the index settings it failed under (index_settings.py: no credentials)
    passing: bool = False  # the index out of reach, or the tool killed: for its session alone

    def to_json(self) -> JsonObject:
        return {"requirements": list(self.requirements), "kind": self.kind, "error": self.error,
                "message": self.message, "seconds": self.seconds, "at": self.at, "python": self.python,
                "tool": self.tool, "index": list(self.index), "passing": self.passing}

    @classmethod
    def from_json(cls, data: JsonMapping) -> FailedEntry:
        """The entry; KeyError, TypeError or ValueError where `data` is not one."""
        entry = cls(tuple(str(r) for r in data["requirements"]), str(data["kind"]), str(data["error"]),
                    str(data["message"]), float(data["seconds"]), float(data["at"]), str(data["python"]),
                    str(data["tool"]), tuple(str(s) for s in data.get("index", ())), data.get("passing") is True)
        if entry.kind not in KEPT_KINDS:
            raise ValueError(f"kind {entry.kind!r}")
        return entry


def key(requirements: Sequence[str], tool: str, index: Sequence[str]) -> str:
    """The entry's name: a digest of the requirement set, the interpreter (a wheel exists for one Python and not
    another), the tool and the index settings it read (one index may lack what another holds)."""
    given = {"requirements": sorted(set(requirements)), "python": sys.executable, "version": sys.version,
             "tool": tool, "index": list(index)}
    return hashlib.sha256(json.dumps(given, sort_keys=True).encode()).hexdigest()[:16]


def path(root: Path, name: str) -> Path:
    return Path(root) / FOLDER / f"{name}.json"


def remembered(root: Path, name: str) -> FailedEntry | None:
    """The failure kept under `name`; None where there is none, or it cannot be read (the next failure rewrites it)."""
    try:
        return FailedEntry.from_json(json.loads(path(root, name).read_text()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):  # unreadable: as absent
        return None


def remember(root: Path, name: str, entry: FailedEntry) -> None:
    """Keep `entry` under `name`, atomically: a reader finds the old entry or the new one, never part of one."""
    target = path(root, name)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}-", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(entry.to_json(), indent=1) + "\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def forget(root: Path, name: str) -> None:
    """Drop the entry under `name` (the set was made after all)."""
    path(root, name).unlink(missing_ok=True)


def unreachable(text: str) -> bool:
    """Whether a tool's output says it could not reach the index (its connection, not the requirements, failed)."""
    lowered = text.lower()
    return any(marker in lowered for marker in UNREACHABLE)


def no_room(text: str) -> bool:
    """Whether a tool's output says a file system it wrote to is full or read-only (the disk, not the requirements,
    failed)."""
    lowered = text.lower()
    return any(marker in lowered for marker in NO_ROOM)


def signal_name(number: int) -> str:
    """SIGKILL for 9; "signal N" where the number names none."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def key_line(text: str) -> str:
    """The line of a tool's error output that says why: pip's first "ERROR:" line, else uv's "error:" line (its
    output off a terminal) or "×" line (on one), each with its causes, else the last line that is not a warning."""
    lines = [line.strip() for line in text.splitlines()]
    for line in lines:
        if line.startswith("ERROR:"):
            return line[len("ERROR:"):].strip()
    for i, line in enumerate(lines):
        if line.startswith("error:"):
            parts = [line[len("error:"):].strip().rstrip(":")]
            for after in lines[i + 1:]:  # up to the blank line; a cause wraps over lines where COLUMNS is narrow
                if not after:
                    break
                if after.startswith("cause:"):
                    parts.append(after[len("cause:"):].strip())
                else:
                    parts[-1] += " " + after
            return ": ".join(parts)
    for i, line in enumerate(lines):
        if line.startswith("×"):
            parts = [line[1:].strip().rstrip(":")]
            for after in lines[i + 1:]:  # up to the blank line; uv wraps a cause over lines of its own
                if not after:
                    break
                if after.startswith(_UV_CAUSE):
                    parts.append(after[len(_UV_CAUSE[0]):].strip())
                else:
                    parts[-1] += " " + after.lstrip("│ ")
            return ": ".join(parts)
    said = [line for line in lines if line and not line.lower().startswith("warning")]
    return said[-1] if said else ""


@dataclass(frozen=True)
class Memory:
    """One requirement set's remembered failure, for make(): `check` raises it again, `kept` remembers a new one.

    since: time.time() when the session began (an entry from then on is this session's). retry: try again one from
    before. started: time.monotonic() when make() began (the seconds a failure reports count from it). index: the
    tool's index settings (index_settings.py).
    """

    root: Path
    requirements: tuple[str, ...]
    tool: str
    since: float
    retry: bool
    started: float
    index: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return key(self.requirements, self.tool, self.index)

    def spent(self) -> float:
        return round(time.monotonic() - self.started, 3)

    def check(self) -> None:
        """Raise the failure remembered for this set, if there is one to trust (called again under each maker's
        lock: another process may have failed at it while this one waited)."""
        known = remembered(self.root, self.name)
        if known is None:
            return
        if known.at >= self.since:  # another process of this session tried while this one waited
            raise EnvironmentFailed(known.kind, known.message, known.error, self.spent(), tool=self.tool,
                                    by_another=True, passing=known.passing)
        if self.retry or known.passing:  # an earlier session's outage: tried again
            return
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(known.at))
        raise EnvironmentFailed(known.kind, f"{known.message} (remembered: tried {when} under "
                                            f"{described(known.index)}, failing in "
                                            f"{known.seconds:.1f} s; --gpu-budget-update tries it again)",
                                known.error, self.spent(), True, self.tool)

    @contextlib.contextmanager
    def kept(self) -> Iterator[None]:
        """Inside a maker's lock: a resolve or install failure is remembered before the lock is let go, so a process
        waiting on the lock finds it (check) instead of trying again (a passing one, for this session alone)."""
        try:
            yield
        except EnvironmentFailed as exc:
            exc.seconds, exc.tool = self.spent(), self.tool
            if exc.kind in KEPT_KINDS and not (exc.remembered or exc.by_another):
                remember(self.root, self.name, FailedEntry(self.requirements, exc.kind, redact(exc.error), redact(str(exc)),
                                                           exc.seconds, time.time(), sys.executable, self.tool,
                                                           self.index, exc.passing))
            raise
