"""What a case prints is pytest's captured output of the test that measured it, for a function case and a command
alike: a function case's child inherits the descriptors pytest's capture holds, and a command's measuring child
passes every byte it reads from the command's pipes on to them (keeping the stderr tail for the report). A
failure's report shows it, a pass shows nothing, and `-s` lets it through."""

import pytest

RUNNERS = '''
import sys


def run(ctx):
    print(f"case stdout {ctx.params['name']}")
    print(f"case stderr {ctx.params['name']}", file=sys.stderr)
    with ctx.meter.phase("train_step_1", step=1):
        pass
    if ctx.params["name"] == "failing":
        raise RuntimeError("planted")
'''

SCRIPT = '''
import sys

name = sys.argv[1]
print(f"case stdout {name}")
print(f"case stderr {name}", file=sys.stderr)
sys.exit(3 if name == "failing" else 0)
'''

TESTS = '''
import sys
from pathlib import Path

import pytest
from gpu_budget import Scenario

HERE = Path(__file__).resolve().parent
CASES = {{
    "function": lambda name: Scenario(name=name, run="runners:run", params={{"name": name}}),
    "command": lambda name: Scenario(name=name, command=[sys.executable, str(HERE / "script.py"), name]),
}}


@pytest.mark.parametrize("name", ["passing", "failing"])
@pytest.mark.gpu_budget(ram="2 GiB")
def test_prints(gpu_budget, name):
    gpu_budget.measure(CASES["{kind}"](name))
'''


@pytest.fixture(params=["function", "command"])
def project(request, pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, script=SCRIPT, test_mem=TESTS.format(kind=request.param))
    return pytester


def test_a_cases_output_is_the_tests_captured_output(project):
    result = project.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "passing" not in out.replace("test_prints[passing]", ""), out  # a pass: nothing of its output shown
    result.stdout.fnmatch_lines(["*_ test_prints?failing? _*", "*- Captured stdout call -*", "case stdout failing",
                                 "*- Captured stderr call -*", "case stderr failing"])


def test_a_cases_output_goes_straight_through_under_s(project):
    result = project.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget", "-s")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*case stdout passing*", "*case stdout failing*"])
    result.stderr.fnmatch_lines(["case stderr passing", "case stderr failing"])
    assert "Captured stdout call" not in result.stdout.str()
