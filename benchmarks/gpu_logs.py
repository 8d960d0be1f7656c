"""pytest's own outcome of each GPU test, read from its committed log (benchmarks/results/gpu-logs/<stem>.log.gz).

A report's row holds the gate's verdict and whether the gate passed the case;
the test around it can still fail on its own assertion after measuring (S2's
real-scale row was "no-baseline", passed by the gate, in a test pytest failed).
So the GPU results page reads each test's outcome here, from the session's
log, and shows it beside the gate's verdict. Only what the log says is read:
its closing counts, each failure's section (the test's name, the assertion's
file:line or the gate's "[gpu-budget VERDICT]" line, and its first error
line), and the progress lines that name each module. A log whose failures
cannot be told apart, or whose sections do not add up to its counts, is an
error naming the log, never read as passed.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.gpu_reports import RESULTS, ROOT

LOGS = f"{RESULTS}/gpu-logs"
_COUNT = re.compile(r"(\d+) (failed|passed|skipped|deselected|errors?|xfailed|xpassed|warnings?)\b")
_SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+) in [\d.]+s\b")
_PROGRESS = re.compile(r"^(\S+\.py) ([.FEsxX]*)\s*(?:\[\s*\d+%\])?$")
_MORE = re.compile(r"^([.FEsxX]+)\s*\[\s*\d+%\]$")  # a module's marks wrapped onto the next line
_BANNER = re.compile(r"^={3,} (.+?) ={3,}$")
_HEADER = re.compile(r"^_{3,} (\S.*?) _{3,}$")
_WHERE = re.compile(r"^(\S+\.py):(\d+): (\w+)$")  # the innermost frame: "path:line: ErrorType"
_FRAME = re.compile(r"^([^/\s]\S*\.py):\d+: ")    # a frame in the project (a relative path): the test's is first
_SHORT = re.compile(r"^(FAILED|ERROR) (\S+?\.py)::(\S+)")  # the short summary's "FAILED module::test" (-rf)


@dataclass(frozen=True)
class Failure:
    """One failed (or errored) test as its log shows it."""

    test: str            # the test's name as pytest heads its section: "test_fix[lora]", "TestX.test_y"
    module: str | None   # "memtests/test_s2_paraformer.py", where the log names it
    kind: str            # "failed" or "error"
    where: str | None    # "memtests/test_s2_paraformer.py:54: AssertionError", or None
    gate: str | None     # "[gpu-budget pass] expected ...": the gate's verdict failed the test
    error: str | None    # the first "E   " line, without its prefix
    body: tuple[str, ...] = field(default=(), repr=False, compare=False)  # the section's lines

    @property
    def place(self) -> str | None:
        """The innermost frame's file name and line: "test_s2_paraformer.py:54"."""
        return self.where.rsplit(": ", 1)[0].rsplit("/", 1)[-1] if self.where else None

    @property
    def short(self) -> str:
        """For a table cell: "on the gate's verdict", or the assertion's file:line and its error's type."""
        if self.gate:
            return "on the gate's verdict"
        if self.where:
            return f"at {self.place} ({self.where.rsplit(': ', 1)[1]})"
        return (self.error or "no reason in the log")[:80]

    @property
    def reason(self) -> str:
        """Why pytest failed it, in the log's words: the gate's line, else the assertion's place and error."""
        if self.gate:
            return self.gate
        place = self.where.rsplit(": ", 1)[0].removeprefix("memtests/") if self.where else None
        return ", ".join(x for x in (place and f"at {place}", self.error) if x) or "no reason in the log"


@dataclass(frozen=True)
class Log:
    """One pytest session's log: its closing counts and its failures."""

    stem: str
    summary: str                  # "1 failed, 7 passed, 23 deselected"
    counts: dict[str, int]
    modules: tuple[str, ...]      # the modules its progress lines name, in order (none under xdist)
    failures: tuple[Failure, ...]

    def failure(self, nodeid: str) -> Failure | None:
        """The failure of the test a report row's node id ("module::test::label") belongs to, or None."""
        module, _, rest = nodeid.partition("::")
        test = rest.rsplit("::", 1)[0].replace("::", ".")
        named = [f for f in self.failures if f.test == test and f.module == module]
        if named:
            return named[0]
        if any(f.test == test and f.module is None for f in self.failures):  # xdist: another module's, or this one's
            raise ValueError(f"{self.stem}: the log does not say which module's {test} failed")
        return None

    def outcome(self, nodeid: str) -> str:
        """pytest's outcome of the row's test: "failed", "error" or "passed" (a row is a test that ran)."""
        found = self.failure(nodeid)
        if found:
            return found.kind
        if not self.counts.get("passed"):
            raise ValueError(f"{self.stem}: {nodeid} did not fail, yet the log counts no test passed ({self.summary})")
        return "passed"


def path(stem: str) -> Path:
    return ROOT / LOGS / f"{stem}.log.gz"


def has(stem: str) -> bool:
    return path(stem).exists()


def load(stem: str) -> Log:
    """The committed log of a report's session (benchmarks/results/gpu-logs/<stem>.log.gz)."""
    with gzip.open(path(stem), "rt", errors="replace") as f:
        return parse(f.read(), stem)


def parse(text: str, stem: str = "log") -> Log:
    lines = text.splitlines()
    summaries = [m.group(1) for line in lines if (m := _SUMMARY.match(line))]
    if not summaries:
        raise ValueError(f"{stem}: no closing counts in the log (a session cut before its end?)")
    summary = summaries[-1]
    counts = {("error" if k.startswith("error") else k): int(n) for n, k in _COUNT.findall(summary)}
    progress = _progress(lines)
    sections = {"failed": _sections(lines, "FAILURES"), "error": _sections(lines, "ERRORS")}
    named = {(m.group(1), m.group(3).split(" ")[0].replace("::", ".")): m.group(2)
             for line in lines if (m := _SHORT.match(line))}
    failures = []
    for kind, code in (("failed", "F"), ("error", "E")):
        found = sections[kind]
        if len(found) != counts.get(kind, 0):
            raise ValueError(f"{stem}: {len(found)} {kind} section(s) against the closing counts' {summary!r}")
        # serial: the sections follow the progress lines' order, so the n-th F is the n-th failure's module
        owners = [module for module, marks in progress for mark in marks if mark == code]
        serial = len(owners) == len(found)
        for i, (header, body) in enumerate(found):
            test = header.removeprefix("ERROR at setup of ").removeprefix("ERROR at teardown of ")
            module = named.get(("FAILED" if kind == "failed" else "ERROR", test)) or (
                owners[i] if serial else _module_in(body))
            failures.append(_failure(test, module, kind, body))
    return Log(stem, summary, counts, tuple(dict.fromkeys(m for m, _ in progress)), tuple(failures))


def _progress(lines: list[str]) -> list[tuple[str, str]]:
    """(module, its marks) per progress line, a wrapped line joined to its module's (xdist's lines name none)."""
    out: list[tuple[str, str]] = []
    last = None
    for i, line in enumerate(lines):
        if m := _PROGRESS.match(line):
            out.append((m.group(1), m.group(2)))
            last = i
        elif (m := _MORE.match(line)) and last == i - 1:
            out[-1] = (out[-1][0], out[-1][1] + m.group(1))
            last = i
    return out


def _sections(lines: list[str], banner: str) -> list[tuple[str, list[str]]]:
    """The sections under `=== banner ===`, each (its header's name, its lines), until the next banner."""
    out: list[tuple[str, list[str]]] = []
    inside = False
    for line in lines:
        m = _BANNER.match(line)
        if m:
            inside = m.group(1) == banner
            continue
        if not inside:
            continue
        h = _HEADER.match(line)
        if h:
            out.append((h.group(1), []))
        elif out:
            out[-1][1].append(line)
    return out


def _module_in(body: list[str]) -> str | None:
    """Under xdist (no module in the progress line): the module of the section's first frame in the project."""
    return next((m.group(1) for line in body if (m := _FRAME.match(line))), None)


def _failure(test: str, module: str | None, kind: str, body: list[str]) -> Failure:
    where = [line for line in body if _WHERE.match(line)]
    gate = next((line for line in body[:3] if line.startswith("[gpu-budget ")), None)
    error = next((line[1:].strip() for line in body if line.startswith("E ")), None)
    if not (where or gate or error):  # a bare line (the gate's error before it measured): the section's first
        error = next((line.strip() for line in body if line.strip()), None)
    return Failure(test, module, kind, where[-1] if where else None, gate, error, tuple(body))
