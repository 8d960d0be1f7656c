"""A $TMPDIR too long for the gate's Unix sockets is a clear usage error naming it, before any child starts
(plugin/gpu_budget/isolate/unix_paths.py), not a bare "AF_UNIX path too long" from deep in multiprocessing."""

import os
import shutil
import tempfile

import pytest

TESTS = '''
import sys
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_command(gpu_budget):
    gpu_budget.measure(Scenario(name="c", command=[sys.executable, "-c", "x = bytearray(2**20)"]))
'''


def test_a_tmpdir_too_long_for_a_unix_socket_is_a_usage_error_naming_it(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    long = pytester.path / ("t" * max(1, 100 - len(str(pytester.path))))  # an existing folder of 100 bytes or more
    long.mkdir()
    monkeypatch.setenv("TMPDIR", str(long))
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(test_mem=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    named = f"ERROR: TMPDIR={str(long)!r} ({len(os.fsencode(str(long)))} bytes) is too long for the Unix sockets"
    result.stderr.fnmatch_lines([named + "*at most 107 bytes*set TMPDIR to a shorter folder*"])
    assert "AF_UNIX path too long" not in result.stdout.str()
    assert list(long.iterdir()) == []  # no forkserver, no child: nothing made under it


def test_a_tmpdir_that_fits_runs_the_case(pytester, monkeypatch):
    """The limit is the kernel's, not a guess: a TMPDIR of the longest length the error allows runs a command case."""
    monkeypatch.delenv("CI", raising=False)
    room = 107 - len("/gpu-budget-mp-XXXXXXXX/listener-XXXXXXXX")  # the longest TMPDIR the forkserver's socket fits under
    top = tempfile.mkdtemp(prefix="gb-", dir="/tmp")
    fits = os.path.join(top, "t" * (room - len(top) - 1))
    os.mkdir(fits)
    monkeypatch.setenv("TMPDIR", fits)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(test_mem=TESTS)
    try:
        result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")
    finally:
        shutil.rmtree(top)
    result.assert_outcomes(passed=1)
