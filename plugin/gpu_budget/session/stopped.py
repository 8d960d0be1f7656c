"""Why a session ended interrupted: a Ctrl-C or SIGTERM, or pytest stopping it itself; or not interrupted at all.

pytest ends a session whose modules could not all be collected ("1 error
during collection") and one a test ends with `pytest.exit()` with the same exit
code as a Ctrl-C; the gate's line on an interrupted session's reports names
which it was (judge/failsafe.interrupted), so a collection error does not read
as a signal no one sent.

A stop at a failing test that the user asked for is no interruption: `-x`
ends a serial session as failed (its words in session.shouldfail), but `--sw` ends one with pytest's Interrupted,
and pytest-xdist's controller ends `-x` (`--maxfail`) and `--sw` alike with an
Interrupted of its own. Such a stop is said as one, never as an interruption.
"""

from __future__ import annotations

import re

import pytest

from gpu_budget.session.data import SessionData

SIGNALS = "Ctrl-C, SIGTERM"
CAUSE = pytest.StashKey[str]()
ASKED = pytest.StashKey[str]()
REPORTED = pytest.StashKey[set[str]]()  # the node ids of the tests that reported
SHOWN = 5  # unrun tests a stop names, before "and N more"  # the words of a stop at a failure that -x / --maxfail / --sw asked for
STEPWISE = "continuing from this test next run"  # what pytest's --sw stop says (_pytest/stepwise.py)
MAXFAIL = re.compile(r"stopping after \d+ failures?$")  # what pytest-xdist's controller says as -x / --maxfail stops


class StopCause:
    """Notes pytest's own reason where pytest, not a signal, interrupted the session, and a stop the user asked for."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        error = excinfo.value
        why = str(error) if isinstance(error, KeyboardInterrupt) and type(error) is not KeyboardInterrupt else ""
        if asked_stop(self.config, why):
            self.config.stash[ASKED] = why
        elif isinstance(error, pytest.Session.Interrupted) and why:
            self.config.stash[CAUSE] = f"pytest: {why}"
        elif isinstance(error, pytest.exit.Exception):
            self.config.stash[CAUSE] = f"pytest.exit(): {error.msg}"

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Note each test that reported (a worker's too, on the xdist controller): a stop names the others unrun."""
        self.config.stash.setdefault(REPORTED, set()).add(report.nodeid)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """A serial -x / --maxfail stops with pytest's Failed, no Interrupted: its words are in session.shouldfail
        (read before the gate's own failure is written there), so its summary says the stop as xdist's does."""
        why = session.shouldfail if isinstance(session.shouldfail, str) else ""
        if ASKED not in self.config.stash and asked_stop(self.config, why):
            self.config.stash[ASKED] = why


def asked_stop(config: pytest.Config, why: str) -> bool:
    """Whether pytest's (or pytest-xdist's) Interrupted saying `why` is the stop at a failure -x, --maxfail or --sw
    asked for."""
    stepwise = config.getoption("stepwise", False) or config.getoption("stepwise_skip", False)
    maxfail = config.getoption("maxfail", 0) or 0
    return bool(why) and (stepwise and STEPWISE in why or maxfail > 0 and MAXFAIL.match(why) is not None)


def cause(config: pytest.Config) -> str:
    """Why the session was interrupted: pytest's reason where it stopped the session itself, else a signal."""
    return config.stash.get(CAUSE, SIGNALS)


def interrupted(config: pytest.Config, exitstatus: int) -> str | None:
    """Why the session that ended with `exitstatus` was interrupted (cause()); None where it was not, or where it
    stopped at a failure as the user asked (asked())."""
    return cause(config) if exitstatus == pytest.ExitCode.INTERRUPTED and asked(config) is None else None


def asked(config: pytest.Config) -> str | None:
    """The words of the stop at a failure -x / --maxfail / --sw asked for, where the session ended so."""
    return config.stash.get(ASKED, None)


def as_asked(config: pytest.Config, data: SessionData) -> list[str]:
    """What the summary says of a session that stopped at a failure as -x / --maxfail / --sw asked (nothing for one
    that did not): a stop, not an interruption, how many of the selected tests had reported by then, and which
    selected budget tests never ran (never judged, their baselines untouched)."""
    why = asked(config)
    if why is None:
        return []
    selected, rows = data.selected, data.rows
    reported = len({r.test_nodeid for r in rows})
    of = f" of {selected}" if selected >= reported and selected else ""
    lines = [(f"the session stopped at a failing test, as -x or --sw asks ({why}), after {reported}{of} selected "
              f"memory-budget test{'' if (selected or reported) == 1 else 's'} reported")]
    came = config.stash.get(REPORTED, set())
    unrun = list(dict.fromkeys(n for n in data.chosen if n not in came))
    if unrun:
        more = f" and {len(unrun) - SHOWN} more" if len(unrun) > SHOWN else ""
        lines.append(f"not run, so not judged and their baselines untouched: {', '.join(unrun[:SHOWN])}{more}")
    return lines
