"""A bad argument to the `gpu_budget` fixture fails its test at the test's own line, naming the argument and value.

The argument is the user's input, as a marker's is: the failure shows the call
in the test that made it and the message, not a traceback through the gate's
own code to read past. The gate's frames on the way (fixture.py, session.py)
set `__tracebackhide__ = gate_frames`: pytest hides them for a failure or skip
the gate chose, and shows them for anything else (a bug of the gate). A
marker's mistake is the message alone: the marker is no line of the body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn, TypeVar

import pytest

T = TypeVar("T")  # what or_refuse's read returns


def gate_frames(excinfo: pytest.ExceptionInfo[BaseException] | None) -> bool:
    """Whether pytest hides a gate frame from the test's traceback: for an outcome the gate chose (pytest.fail,
    pytest.skip), never for an exception it did not (a bug of the gate keeps its whole traceback)."""
    return excinfo is not None and excinfo.errisinstance((pytest.fail.Exception, pytest.skip.Exception))


def refuse(message: str) -> NoReturn:
    """Fail the test with `message` at its line that called the fixture (the gate's frames hidden)."""
    __tracebackhide__ = True
    pytest.fail(message)


def or_refuse(read: Callable[[], T], where: str = "") -> T:
    """read()'s value; a TypeError or ValueError it raises (a check of the user's input, naming the value) fails the
    test. Given `where` (the test and the call: "t.py::test: explore()"), a check of that call's arguments: its
    message after `where`, at the test's line that made the call, as refuse() fails. Without, a check of the
    test's marker (or of its card), whose message names the test itself and which is no line of the test's body:
    the message alone, with no traceback through the gate's own code. Only for a read that checks, never one that
    runs: a bug of the gate there would read as the user's mistake."""
    __tracebackhide__ = True
    try:
        return read()
    except (TypeError, ValueError) as exc:
        bad = f"{where} {exc}" if where else str(exc)
    if where:  # outside the except: no "during handling of the above exception"
        refuse(bad)
    pytest.fail(bad, pytrace=False)
