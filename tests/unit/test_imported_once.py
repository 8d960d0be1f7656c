"""tests/imported_once.py: a compiled package a pytester test imported is named, and put back for the tests after."""

import importlib.util
from pathlib import Path

import pytest

DROPS = '''
import sys


def test_imports_numpy_inside(pytester):
    assert "numpy" not in sys.modules, "numpy was imported before this test (by a plugin?): pytester keeps it"
    import numpy  # noqa: F401  first imported here: pytester drops it at the teardown
'''

AGAIN = '''
def test_imports_numpy_again():
    import numpy

    assert int(numpy.arange(3).sum()) == 3
'''


@pytest.mark.skipif(importlib.util.find_spec("numpy") is None, reason="numpy is not installed")
def test_a_compiled_package_imported_under_pytester_is_named_and_still_imports_after(pytester):
    """numpy, not torch: the same failure, imported in a tenth of the time. Before: the second test failed with
    "ImportError: cannot load module more than once per process"."""
    pytester.makepyfile(imported_once=(Path(__file__).parents[1] / "imported_once.py").read_text(),
                        conftest='pytest_plugins = ["pytester", "imported_once"]\n', test_a_drops=DROPS, test_b_again=AGAIN)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    said = ("*test_a_drops.py::test_imports_numpy_inside imported numpy while pytester watched sys.modules, and pytester "
            "dropped them at the teardown*Request a session fixture of tests/imported_once.py (torch, numpy, matplotlib)*")
    result.stdout.fnmatch_lines([said])
