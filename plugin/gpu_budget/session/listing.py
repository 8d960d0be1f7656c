"""Whether a pytest invocation only lists what a run would do: it measures nothing, by design.

Collecting (--collect-only), planning or setting up fixtures alone (--setup-plan,
--setup-only), showing fixtures, markers, help or the version: a gated session
of these runs no case, so the fail-safe (a run that measured nothing fails under
CI) does not apply, and no report is written over the last gate's.
"""

from __future__ import annotations

import pytest

LISTING = ("collectonly", "setuponly", "setupplan", "showfixtures", "show_fixtures_per_test", "markers", "help", "version")


def lists_only(config: pytest.Config) -> bool:
    """True where the invocation runs no test body (pytest's own dests of the listing options)."""
    return any(getattr(config.option, name, False) for name in LISTING)
