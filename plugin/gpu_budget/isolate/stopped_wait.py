"""A wait for a measured child cut short by the test process's own code, not by a Ctrl-C.

pytest-timeout's signal method (its default where SIGALRM exists) raises its
`Failed: Timeout` from a signal handler into whatever the test is doing: here,
the parent's wait for its child. The child is ended as on a Ctrl-C, but the
session goes on, so the case keeps a row with what its child had measured
(forkserver.measure_request) before the exception goes on to pytest
(session/case.py, session/session.py).
"""

from __future__ import annotations

from gpu_budget.isolate.events import Event
from gpu_budget.isolate.protocol import ChildEnding
from gpu_budget.model.result import Measurement


class WaitStopped(BaseException):
    """The wait for a child was stopped by `cause`; what the child had said so far (`seen`, `ending`), then once read,
    its `measurement` (None: nothing of it was measured, as in a helper of another environment or a prepare).

    A BaseException, as pytest's own Failed is: no `except Exception` on the way up turns the stop into a case
    error and goes on measuring."""

    def __init__(self, cause: BaseException, seen: list[Event] | None = None, ending: ChildEnding | None = None,
                 measurement: Measurement | None = None) -> None:
        super().__init__(f"the wait for a measured child was stopped by {stopper(cause)}")
        self.cause, self.seen, self.ending, self.measurement = cause, seen or [], ending, measurement

    def measured(self, measurement: Measurement) -> WaitStopped:
        return WaitStopped(self.cause, self.seen, self.ending, measurement)


def stops_wait(exc: BaseException) -> bool:
    """Whether `exc`, raised into a wait for a child, stops only that wait: a test's own outcome raised from a signal
    handler (pytest-timeout's `Failed`, a `pytest.fail()` or `pytest.skip()`: pytest's outcomes are BaseExceptions,
    not Exceptions), not the session (Ctrl-C, SIGTERM as Ctrl-C, an exit). An Exception is the gate's own error (a
    forkserver that cannot start names its cause) and goes on as it is."""
    return not isinstance(exc, (Exception, KeyboardInterrupt, SystemExit, GeneratorExit, WaitStopped))


def stopper(cause: BaseException) -> str:
    """The exception that stopped a wait, as a row says it: `Failed: Timeout (>6.0s) from pytest-timeout.`."""
    text = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {text[0]}" if text else type(cause).__name__
