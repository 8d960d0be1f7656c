"""torch elastic's record of a launch's first failure, read from the launcher's stderr.

torchrun (and accelerate launch, which runs it) reaps its workers itself and
prints, when one fails, a "Root Cause (first observed failure)" block naming
the rank and its exit code; the ranks it stopped after that come later in its
failures, so the order is the agent's own, not a guess. The process tree
cannot always tell: on a loaded host both workers may be reaped between two of
its polls. This is the launcher's word where it gave one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HEADER = "Root Cause (first observed failure):"
_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)", re.MULTILINE)
_EXITCODE = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)", re.MULTILINE)
_END = re.compile(r"^={10,}", re.MULTILINE)


@dataclass(frozen=True)
class FirstFailure:
    """The rank torch elastic names as the first to fail, and its exit code (negative: the signal that ended it)."""

    rank: int
    exitcode: int


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
    return None if rank is None or code is None else FirstFailure(int(rank.group(1)), int(code.group(1)))
