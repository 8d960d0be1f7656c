"""A misspelt ini key of the gate ("gpu_budget_timout", "gpu_bugdet = true") is a usage error, naming the key.

pytest only warns of an ini key no plugin registered ("Unknown config option")
and runs on without it, after collection, as `--strict-config` is off by
default. For the gate that is a pass where nothing was gated: `gpu_budget =
true` misspelt in a GPU job's pytest.ini skips every memory-budget test, a
misspelt `gpu_budget_require_gpu` lets a job on a runner without a GPU pass.
A key of the gate's namespace (it starts `gpu_budget`, however separated), or
one that reads like one of the gate's own, stops the session instead, before
any case runs: pytest checks the keys when its collection ends, and this
object hears the warning there (pytest_warning_recorded), on the controller
of an xdist run (its workers see the same file). Any other unknown key stays
pytest's warning. A session that silences pytest's config warnings
(`-p no:warnings`, a filterwarnings `ignore`) hears none of them.
"""

from __future__ import annotations

import difflib
import re
import warnings

import pytest

from gpu_budget.session.options import OPTIONS, overridden

UNKNOWN = re.compile(r"Unknown config option: (\S+)")
LIKE = 0.8  # how alike (difflib's ratio) a key must read to one of the gate's to be taken as its misspelling


def _own(key: str) -> bool:
    return re.sub(r"[\W_]", "", key.lower()).startswith("gpubudget")


def refusal(message: str, where: str) -> str | None:
    """The usage error for pytest's warning `message` where it names an unknown key of the gate's; None otherwise."""
    found = UNKNOWN.match(message.strip())
    if not found:
        return None
    key = found.group(1)
    names = [option.name for option in OPTIONS]
    close = difflib.get_close_matches(key.lower().replace("-", "_"), names, n=1, cutoff=LIKE)
    if not close and not _own(key):
        return None
    meant = f"did you mean {close[0]!r}? " if close else ""
    return (f"{where}: {key!r} is no option of pytest-gpu-budget, and pytest would run on without it: {meant}"
            "the options: python -m gpu_budget options (docs/options.md)")


class MisspeltKeys:
    """Hears pytest's warnings of unknown ini keys and refuses the gate's (module docstring)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def _where(self, key: str) -> str:
        return f"-o {key}" if overridden(self.config, key) else str(self.config.inipath)

    def pytest_warning_recorded(self, warning_message: warnings.WarningMessage, when: str) -> None:
        if when != "config":
            return
        found = UNKNOWN.match(str(warning_message.message).strip())
        error = refusal(str(warning_message.message), self._where(found.group(1))) if found else None
        if error:
            raise pytest.UsageError(error)
