"""Compiled packages a pytester test needs in the pytest process: imported once, before pytester's snapshot.

pytester notes sys.modules when a test starts and, at its teardown, drops every module the test imported. A package
built on a compiled extension does not come back from that: the extension stays loaded in the process, and the next
import of the package fails (torch: "SystemError: ... bad call flags"; numpy, and torch through it: "ImportError:
cannot load module more than once per process"). Whichever test imported it next failed, in a run of a few files
where no test module had imported it at collection. A test requests the session fixture instead: a session fixture is
set up before the test's pytester, so the package is in the snapshot and stays. The teardown check fails a test that
dropped such a package, naming it, and puts the package back so that the tests after it still run.
"""

import importlib.machinery
import sys

import pytest


def _session_import(name: str):
    @pytest.fixture(scope="session", name=name)
    def imported():
        return pytest.importorskip(name)

    imported.__doc__ = f"{name}, imported for the whole session (skips where it is not installed)."
    return imported


FIXTURES = ("torch", "numpy", "matplotlib")
torch, numpy, matplotlib = map(_session_import, FIXTURES)


def _compiled_package(name: str, module) -> str | None:
    """The top-level package of `module` if it is a compiled extension outside the standard library (whose own
    extensions import again)."""
    top = name.partition(".")[0]
    loader = getattr(getattr(module, "__spec__", None), "loader", None)
    if isinstance(loader, importlib.machinery.ExtensionFileLoader) and top not in sys.stdlib_module_names:
        return top
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item):
    before = dict(sys.modules)
    try:
        return (yield)
    finally:
        gone = {_compiled_package(name, before[name]) for name in before.keys() - sys.modules.keys()} - {None}
        if gone:
            sys.modules.update({n: m for n, m in before.items() if n.partition(".")[0] in gone and n not in sys.modules})
            pytest.fail(f"{item.nodeid} imported {', '.join(sorted(gone))} while pytester watched sys.modules, and "
                        "pytester dropped them at the teardown: a compiled package cannot be imported twice in one "
                        "process, so the next test to import one would fail. Request a session fixture of "
                        f"tests/imported_once.py ({', '.join(FIXTURES)}) instead, or add one; they are put back for "
                        "the tests after this one.", pytrace=False)
