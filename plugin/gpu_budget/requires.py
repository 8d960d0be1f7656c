"""Optional packages a runner imports in its measured child: missing or broken, the case is skipped with the reason.

A memtest guards an optional package with `importlib.util.find_spec` at
collection (cheap, imports nothing). find_spec only says the package is on
the path; its import can still fail (a missing dependency of its own, a
binary built for another Python). A runner imports it through
`optional_import`, which turns any such failure into MissingDependency; the
child reports it as kind "missing-dependency" and the session skips the case
with the message, instead of an error. Every other ImportError in a runner
stays an error: it is a bug in the runner, not a missing extra.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType


class MissingDependency(ImportError):
    """An optional package of a scenario is absent or cannot be imported here; the message says how to install it."""


def optional_import(name: str, install: str) -> ModuleType:
    """Import `name`, or raise MissingDependency naming it, the import's own error and the install command."""
    try:
        return importlib.import_module(name)
    except Exception as exc:  # ImportError, but also OSError (a shared library), AttributeError (versions)
        found = importlib.util.find_spec(name.partition(".")[0]) is not None
        state = "is installed but cannot be imported" if found else "is not installed"
        raise MissingDependency(f"{name} {state} ({type(exc).__name__}: {exc}); install: {install}") from exc
