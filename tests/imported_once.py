"""Compiled packages a pytester test needs in the pytest process: imported once, before pytester's snapshot.

pytester notes sys.modules when a test starts and, at its teardown, drops every module the test imported. A package
built on a compiled extension does not come back from that: the extension stays loaded in the process, and the next
import of the package fails (torch: "SystemError: ... bad call flags"; numpy, and torch through it: "ImportError:
cannot load module more than once per process"). Whichever test imported it next failed, in a run of a few files
where no test module had imported it at collection. A test requests the session fixture instead: a session fixture is
set up before the test's pytester, so the package is in the snapshot and stays.
"""

import pytest


def _session_import(name: str):
    @pytest.fixture(scope="session", name=name)
    def imported():
        return pytest.importorskip(name)

    imported.__doc__ = f"{name}, imported for the whole session (skips where it is not installed)."
    return imported


FIXTURES = ("torch", "numpy", "matplotlib")
torch, numpy, matplotlib = map(_session_import, FIXTURES)
