"""What a function case's runner prints is pytest's captured output of the test that measured it: its child inherits
the descriptors pytest's capture holds, so a failure's report shows it, a pass shows nothing, and `-s` lets it through."""

import pytest

RUNNERS = '''
import sys


def run(ctx):
    print(f"runner stdout {ctx.params['name']}")
    print(f"runner stderr {ctx.params['name']}", file=sys.stderr)
    with ctx.meter.phase("train_step_1", step=1):
        pass
    if ctx.params["name"] == "failing":
        raise RuntimeError("planted")
'''

TESTS = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.parametrize("name", ["passing", "failing"])
@pytest.mark.gpu_budget(ram="2 GiB")
def test_prints(gpu_budget, name):
    gpu_budget.measure(Scenario(name=name, run="runners:run", params={"name": name}))
'''


@pytest.fixture
def project(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_mem=TESTS)
    return pytester


def test_a_runners_output_is_the_tests_captured_output(project):
    result = project.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "passing" not in out.replace("test_prints[passing]", ""), out  # a pass: nothing of its output shown
    result.stdout.fnmatch_lines(["*_ test_prints?failing? _*", "*- Captured stdout call -*", "runner stdout failing",
                                 "*- Captured stderr call -*", "runner stderr failing"])


def test_a_runners_output_goes_straight_through_under_s(project):
    result = project.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget", "-s")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*runner stdout passing*", "*runner stdout failing*"])
    result.stderr.fnmatch_lines(["runner stderr passing", "runner stderr failing"])
    assert "Captured stdout call" not in result.stdout.str()
