"""Why a session ended interrupted: a Ctrl-C or SIGTERM, or pytest stopping it itself.

pytest ends a session whose modules could not all be collected ("1 error
during collection") and one a test ends with `pytest.exit()` with the same exit
code as a Ctrl-C; the gate's line on an interrupted session's reports names
which it was (judge/failsafe.interrupted), so a collection error does not read
as a signal no one sent.
"""

from __future__ import annotations

import pytest

SIGNALS = "Ctrl-C, SIGTERM"
CAUSE = pytest.StashKey[str]()


class StopCause:
    """Notes pytest's own reason where pytest, not a signal, interrupted the session."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        error = excinfo.value
        if isinstance(error, pytest.Session.Interrupted) and str(error):
            self.config.stash[CAUSE] = f"pytest: {error}"
        elif isinstance(error, pytest.exit.Exception):
            self.config.stash[CAUSE] = f"pytest.exit(): {error.msg}"


def cause(config: pytest.Config) -> str:
    """Why the session was interrupted: pytest's reason where it stopped the session itself, else a signal."""
    return config.stash.get(CAUSE, SIGNALS)
