"""benchmarks/gpu_logs.py: pytest's outcome of each test, read from its session's log, never assumed."""

import pytest

from benchmarks.gpu_logs import parse

SERIAL = """\
============================= test session starts ==============================
collected 4 items

memtests/test_a.py .F                                                    [ 50%]
memtests/test_b.py F.                                                    [100%]

=================================== FAILURES ===================================
_______________________________ test_as_reported _______________________________
[gpu-budget pass] expected this configuration to break its budget, but it stayed within it: the reproduction is lost

case: as-reported (scenario a, scale real, device cuda)
_______________________________ test_as_reported _______________________________

gpu_budget = <BudgetRun>

>       assert peaks.index(max(peaks)) == 3
E       AssertionError: ([2, 9, 4], [5.4, 7.3, 29.0])

memtests/test_b.py:54: AssertionError
================================== gpu-budget ==================================
memtests/test_a.py::test_as_reported::as-reported  real  pass FAIL
============ 2 failed, 2 passed, 3 deselected in 67.17s (0:01:07) =============
"""


def test_each_failure_is_its_own_modules_test_in_a_serial_log():
    """Two modules' tests of one name failed for different reasons; each row gets its own module's outcome."""
    log = parse(SERIAL, "serial")
    assert log.summary == "2 failed, 2 passed, 3 deselected"
    assert log.counts == {"failed": 2, "passed": 2, "deselected": 3}
    a = log.failure("memtests/test_a.py::test_as_reported::as-reported")
    b = log.failure("memtests/test_b.py::test_as_reported::as-reported")
    assert a.gate.startswith("[gpu-budget pass]") and a.short == "on the gate's verdict"
    assert b.where == "memtests/test_b.py:54: AssertionError" and b.short == "at test_b.py:54 (AssertionError)"
    assert b.error.startswith("AssertionError: ([2, 9, 4]")
    assert log.outcome("memtests/test_a.py::test_fix[x]::x") == "passed"
    assert log.outcome("memtests/test_b.py::test_as_reported::as-reported") == "failed"


def test_an_xdist_failure_that_no_module_claims_is_an_error_not_a_pass():
    """Under xdist the progress line names no module: a failure whose section names none either cannot be given to
    a row (another module may hold a test of that name), so reading it is an error, not a guess either way."""
    text = SERIAL.replace("memtests/test_a.py .F", ".FF.").replace("memtests/test_b.py F.", "")
    log = parse(text, "xdist")
    assert [f.module for f in log.failures] == [None, "memtests/test_b.py"]  # its first frame in the project
    assert log.outcome("memtests/test_b.py::test_as_reported::as-reported") == "failed"
    for module in ("test_a", "test_c"):
        with pytest.raises(ValueError, match="xdist: the log does not say which module's test_as_reported failed"):
            log.outcome(f"memtests/{module}.py::test_as_reported::as-reported")


def test_sections_that_do_not_add_up_to_the_counts_are_an_error():
    with pytest.raises(ValueError, match=r"short: 2 failed section\(s\) against the closing counts' '3 failed"):
        parse(SERIAL.replace("2 failed, 2 passed", "3 failed, 1 passed"), "short")


def test_a_log_cut_before_its_counts_is_an_error():
    with pytest.raises(ValueError, match="cut: no closing counts"):
        parse("\n".join(SERIAL.splitlines()[:-1]), "cut")


def test_a_short_summary_names_the_module_of_a_quiet_runs_failure():
    """`-q` prints no module in the progress line; the short summary's FAILED line names it."""
    text = ("FF                                                                       [100%]\n"
            "=================================== FAILURES ===================================\n"
            "_____ test_one _____\n\n    def test_one():\n>       assert 0\nE       assert 0\n\n"
            "/abs/tests/x.py:3: AssertionError\n"
            "_____ test_two _____\nE   ImportError: No module named 'gpu_budget'\n"
            "=========================== short test summary info ============================\n"
            "FAILED tests/x.py::test_one\nFAILED tests/y.py::test_two - ImportError\n2 failed in 1.00s\n")
    log = parse(text, "quiet")
    assert [(f.module, f.test) for f in log.failures] == [("tests/x.py", "test_one"), ("tests/y.py", "test_two")]
    assert log.failures[1].short == "ImportError: No module named 'gpu_budget'"
