"""A line said on the terminal while a test runs (a wait on another process's build), past pytest's capture as its
live logging is: a wait of minutes said nowhere looks like a hang. An xdist worker has no terminal of its own; its
stderr is the controller's, so the line goes there."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable

import pytest


def say_now(config: pytest.Config) -> Callable[[str], None]:
    """A function that writes one line on `config`'s terminal at once, whatever pytest captures meanwhile."""

    def say(line: str) -> None:
        capture = config.pluginmanager.get_plugin("capturemanager")
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            if reporter is None or hasattr(config, "workerinput"):
                print(line, file=sys.stderr, flush=True)
            else:
                reporter.ensure_newline()
                reporter.write_line(line, yellow=True)

    return say
