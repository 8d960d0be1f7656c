"""torch elastic's record of a launch's first failure, read from the launcher's stderr.

torchrun (and accelerate launch, which runs it) reaps its workers itself and
prints, when one fails, a "Root Cause (first observed failure)" block naming
the rank and its exit code; the ranks it stopped after that come later in its
failures, so the order is the agent's own, not a guess. The process tree
cannot always tell: on a loaded host both workers may be reaped between two of
its polls. This is the launcher's word where it gave one. Its times are whole
seconds, and where it reaped two failures in one of its own polls it names the
lower rank: a failure of the same time among its others (not one it stopped
itself with SIGTERM after the first) is `tied`, and the process tree, which
polls far more often, orders those (`ordered_by`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

HEADER = "Root Cause (first observed failure):"
_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)", re.MULTILINE)
_EXITCODE = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)", re.MULTILINE)
_END = re.compile(r"^={10,}", re.MULTILINE)
_TIME = re.compile(r"^\s*time\s*:\s*(\S+)", re.MULTILINE)
_FAILURES = "Failures:"
_ENTRY = re.compile(r"^\[\d+\]:", re.MULTILINE)


@dataclass(frozen=True)
class FirstFailure:
    """The rank torch elastic names as the first to fail, and its exit code (negative: the signal that ended it)."""

    rank: int
    exitcode: int
    tied: Mapping[int, int] = field(default_factory=dict)  # rank -> exit code: its other failures of the same time

    def ordered_by(self, ends: Mapping[int, float]) -> FirstFailure:
        """The first of the tied failures by when the process tree found each rank gone (`ends`), where it saw them
        all; else the record's own word."""
        candidates = {self.rank: self.exitcode, **self.tied}
        if len(candidates) < 2 or any(rank not in ends for rank in candidates):
            return self
        rank = min(candidates, key=lambda r: ends[r])
        return FirstFailure(rank, candidates[rank])


def first_failure(stderr: str) -> FirstFailure | None:
    """The last root-cause block in `stderr` (a restarted launch prints one per attempt); None where there is none
    or it lacks a rank or an exit code."""
    at = stderr.rfind(HEADER)
    if at < 0:
        return None
    block = stderr[at + len(HEADER):]
    end = _END.search(block)
    block = block[:end.start()] if end else block
    rank, code = _RANK.search(block), _EXITCODE.search(block)
    if rank is None or code is None:
        return None
    time = _TIME.search(block)
    tied = {r: c for r, c, t in _others(stderr[:at])  # a rank the launcher stopped (SIGTERM) came after it anyway
            if time is not None and t == time.group(1) and r != int(rank.group(1)) and c != -15}
    return FirstFailure(int(rank.group(1)), int(code.group(1)), tied)


def _others(before: str) -> list[tuple[int, int, str]]:
    """(rank, exit code, time) of each failure the record lists besides its root cause (its "Failures:" section)."""
    at = before.rfind(_FAILURES)
    if at < 0:
        return []
    out = []
    for entry in _ENTRY.split(before[at + len(_FAILURES):])[1:]:
        rank, code, time = _RANK.search(entry), _EXITCODE.search(entry), _TIME.search(entry)
        if rank and code and time:
            out.append((int(rank.group(1)), int(code.group(1)), time.group(1)))
    return out
