"""A stop at a failing test that the user asked for (--sw; -x under pytest-xdist) is no interruption
(session/stopped.py): no gate problem, the summary says it stopped as asked."""

import json
import sys

import pytest

TESTS = f'''
import sys
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="1 MiB")
def test_over(gpu_budget):
    gpu_budget.measure(Scenario(name="over", command=[{sys.executable!r}, "-c", "x = b'1' * 2**24"]))


@pytest.mark.gpu_budget(ram="2 GiB")
def test_within(gpu_budget):
    gpu_budget.measure(Scenario(name="within", command=[{sys.executable!r}, "-c", "pass"]))
'''


@pytest.mark.parametrize(("given", "words"), [
    (["--sw"], "Test failed, continuing from this test next run."),
    (["--sw", "-n", "2"], "Test failed, continuing from this test next run."),
    (["-x", "-n", "2"], "stopping after 1 failures"),
    (["-x", "-p", "no:xdist"], "stopping after 1 failures"),
], ids=["stepwise", "stepwise-xdist", "exitfirst-xdist", "exitfirst"])
def test_a_stop_at_a_failure_as_asked_is_not_an_interruption(pytester, monkeypatch, given, words):
    """Before, --sw (and, under xdist, -x too) made the gate fail the session: "gpu-budget gate FAILED: the session was
    interrupted (pytest: Test failed, continuing from this test next run.) after 1 of 2 selected memory-budget tests
    reported: ..." (under xdist: "interrupted (Ctrl-C, SIGTERM)", a signal no one sent), while a serial -x said
    nothing: its summary read as a whole selection's ("1 measured, 1 failed") with the other tests never run."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(test_mem=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json", *given)
    out = result.stdout.str()
    assert "was interrupted" not in out and "gpu-budget gate FAILED" not in out, out
    assert json.loads((pytester.path / "r.json").read_text())["gate_problems"] == []
    said = f"the session stopped at a failing test, as -x or --sw asks ({words}), after * of 2 selected memory-budget"
    result.stdout.fnmatch_lines([f"{said} tests reported"])


def test_a_collection_error_still_reads_as_pytest_stopping_the_session(pytester, monkeypatch):
    """A stop no one asked for keeps its line under --sw: a module that cannot be collected."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(test_mem=TESTS, test_broken="import no_such_module_here\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--sw", "--gpu-budget-json=r.json")
    problems = json.loads((pytester.path / "r.json").read_text())["gate_problems"]
    assert any("interrupted (pytest: 1 error during collection)" in p for p in problems), problems
    assert "stopped at a failing test" not in result.stdout.str()


MORE = TESTS + '''

@pytest.mark.parametrize("n", range(6))
@pytest.mark.gpu_budget(ram="2 GiB")
def test_more(gpu_budget, n):
    gpu_budget.measure(Scenario(name="within", command=[sys.executable, "-c", "pass"]))
'''


@pytest.mark.parametrize("given", [["-x", "-p", "no:xdist"], ["-x", "-n", "1"], ["--maxfail=1", "-n", "1"]],
                         ids=["exitfirst", "exitfirst-xdist", "maxfail-xdist"])
def test_a_stop_at_a_failure_names_the_memory_tests_it_left_unrun(pytester, monkeypatch, given):
    """The summary said "after 1 of 7 selected memory-budget tests reported" and no more: which cases were never
    judged (their baselines untouched) was left to guess. It names them now, the first few and how many more."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(test_mem=MORE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--deselect", "test_mem.py::test_more[5]",
                                           *given)
    unrun = ("not run, so not judged and their baselines untouched: test_mem.py::test_within, "
             "test_mem.py::test_more[[]0[]], test_mem.py::test_more[[]1[]], test_mem.py::test_more[[]2[]], "
             "test_mem.py::test_more[[]3[]] and 1 more")
    result.stdout.fnmatch_lines(["*after 1 of 7 selected memory-budget tests reported", unrun])
