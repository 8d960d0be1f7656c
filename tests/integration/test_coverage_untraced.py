"""pytest-cov measuring subprocesses (coverage's `patch = subprocess`, COVERAGE_PROCESS_START) never reaches the
measured processes: coverage's tracer in the forkserver, a function case's child or a command's process adds its own
RAM to the peak gated against a baseline recorded without it."""

import pytest

pytest.importorskip("pytest_cov", reason="pytest-cov is not installed (not in the dev extra)")

SCRIPT = '''
import sys
open("command-saw", "w").write(str("coverage" in sys.modules))
'''

RUNNER = '''
import sys

def saw(ctx):
    with ctx.meter.phase("load"):
        open("function-saw", "w").write(str("coverage" in sys.modules))
'''

CASES = '''
import sys

@pytest.mark.gpu_budget(ram="2 GiB")
def test_function(gpu_budget):
    gpu_budget.measure(Scenario(name="function", run="traced:saw"))

@pytest.mark.gpu_budget(ram="2 GiB")
def test_command(gpu_budget):
    gpu_budget.measure(Scenario(name="command", command=[sys.executable, "script.py"]))
'''


def test_measured_processes_run_without_coverage(project):
    pytester = project(CASES)
    pytester.makepyfile(script=SCRIPT, traced=RUNNER)
    pytester.path.joinpath(".coveragerc").write_text("[run]\npatch = subprocess\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget", "--cov=.")
    result.assert_outcomes(passed=2)
    assert (pytester.path / "command-saw").read_text() == "False"
    assert (pytester.path / "function-saw").read_text() == "False"
