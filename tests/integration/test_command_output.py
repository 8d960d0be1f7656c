"""What a command case prints is pytest's captured output of the test that measured it, as a function case's is
(test_function_output.py): the measuring child reads the command's pipes for the report's stderr tail and passes
every byte on to its own descriptors, the ones pytest's capture holds. A failure's report shows it, a pass shows
nothing, and `-s` lets it through."""

import pytest

SCRIPT = '''
import sys

name = sys.argv[1]
print(f"script stdout {name}")
print(f"script stderr {name}", file=sys.stderr)
sys.exit(3 if name == "failing" else 0)
'''

TESTS = '''
import sys
from pathlib import Path

import pytest
from gpu_budget import Scenario

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("name", ["passing", "failing"])
@pytest.mark.gpu_budget(ram="2 GiB")
def test_prints(gpu_budget, name):
    gpu_budget.measure(Scenario(name=name, command=[sys.executable, str(HERE / "script.py"), name]))
'''


@pytest.fixture
def project(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(script=SCRIPT, test_mem=TESTS)
    return pytester


def test_a_commands_output_is_the_tests_captured_output(project):
    result = project.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "script stdout passing" not in out and "script stderr passing" not in out, out
    result.stdout.fnmatch_lines(["*_ test_prints?failing? _*", "*- Captured stdout call -*", "script stdout failing",
                                 "*- Captured stderr call -*", "script stderr failing"])


def test_a_commands_output_goes_straight_through_under_s(project):
    result = project.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget", "-s")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*script stdout passing*", "*script stdout failing*"])
    result.stderr.fnmatch_lines(["script stderr passing", "script stderr failing"])
    assert "Captured stdout call" not in result.stdout.str()
