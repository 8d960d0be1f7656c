"""A declaration refused in a test's body fails at the test's line, not in the declaring code that refused it.

`Scenario(...)`, `.with_fixes(...)`, `Envelope(...)` check what they are given and
raise a ValueError or TypeError naming the value (an unknown fix, a command that
is no list of strings). Called in a test, pytest showed every frame down to that
raise: the gate's code, for the user to read past. Each declaring module sets
`__tracebackhide__ = refusal` at its top, which pytest calls for the module's
frames (the dataclass __init__ too: it runs in the module's globals). Nothing
here imports pytest; outside pytest the name is never read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

PACKAGE = Path(__file__).resolve().parent.parent  # gpu_budget's own folder


class _Entry(Protocol):  # pytest's TracebackEntry, read as much as needed
    path: Path | str
    statement: object


class _ExceptionInfo(Protocol):
    value: BaseException
    traceback: list[_Entry]


def refusal(excinfo: _ExceptionInfo | None) -> bool:
    """Whether pytest hides a declaring module's frame: where a `raise` of gpu_budget's own code ended the traceback
    with a ValueError or TypeError (a refusal, its message naming the value), not for an exception raised anywhere
    else (a bug of the gate, or one of the user's own code the declaration called), which keeps every frame."""
    if excinfo is None or not isinstance(excinfo.value, (ValueError, TypeError)) or not excinfo.traceback:
        return False
    innermost = excinfo.traceback[-1]
    ours = Path(innermost.path).resolve().is_relative_to(PACKAGE)  # a "<string>" path is never the package's
    return ours and str(innermost.statement).lstrip().startswith("raise ")
