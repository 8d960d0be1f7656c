"""A bad argument to the `gpu_budget` fixture fails its test at the test's own line, naming the argument and value.

The argument is the user's input, as a marker's is: the failure shows the call
in the test that made it and the message, not a traceback through the gate's
own code to read past. The gate's frames on the way (fixture.py, session.py)
set `__tracebackhide__ = gate_frames`: pytest hides them for a failure or skip
the gate chose, and shows them for anything else (a bug of the gate).
"""

from __future__ import annotations

from typing import NoReturn

import pytest


def gate_frames(excinfo: pytest.ExceptionInfo[BaseException] | None) -> bool:
    """Whether pytest hides a gate frame from the test's traceback: for an outcome the gate chose (pytest.fail,
    pytest.skip), never for an exception it did not (a bug of the gate keeps its whole traceback)."""
    return excinfo is not None and excinfo.errisinstance((pytest.fail.Exception, pytest.skip.Exception))


def refuse(message: str) -> NoReturn:
    """Fail the test with `message` at its line that called the fixture (the gate's frames hidden)."""
    __tracebackhide__ = True
    pytest.fail(message)

