"""Which exceptions raised into a wait for a measured child stop only that wait (the case keeps a row), and which go
on as they are (isolate/stopped_wait.py)."""

import pytest
from _pytest.outcomes import Failed, Skipped

from gpu_budget.isolate.stopped_wait import WaitStopped, stopper, stops_wait


@pytest.mark.parametrize("exc", [Failed("Timeout (>6.0s) from pytest-timeout."), Skipped("later")])
def test_pytests_own_outcomes_stop_the_wait(exc):
    assert stops_wait(exc)


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(1), RuntimeError("the forkserver ended ..."),
                                 TimeoutError(), WaitStopped(Failed("x"))])
def test_an_interrupt_an_exit_or_the_gates_own_error_goes_on(exc):
    assert not stops_wait(exc)


def test_the_stopper_is_named_by_its_first_line():
    assert stopper(Failed("Timeout (>6.0s) from pytest-timeout.\n+++ stack +++")) == \
        "Failed: Timeout (>6.0s) from pytest-timeout."
