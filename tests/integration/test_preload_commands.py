"""A preload module that fails to import is said only where it moves a figure: a function case's child is forked
from the forkserver and inherits its imports; a command's processes import what they need themselves."""

import pytest

TESTS = '''
import sys
import pytest
from gpu_budget import Scenario

COMMAND = Scenario(name="cmd", command=[sys.executable, "-c", "held = b'\\\\x01' * (8 << 20)"])
FUNCTION = Scenario(name="fn", run="runners:alloc", params={"mib": 8})


@pytest.mark.gpu_budget(ram="2 GiB")
def test_command(gpu_budget):
    gpu_budget.measure(COMMAND)


@pytest.mark.gpu_budget(ram="2 GiB")
def test_function(gpu_budget):
    gpu_budget.measure(FUNCTION)
'''


@pytest.fixture
def missing_preload(project):
    pytester = project(TESTS)
    pytester.makeini("[pytest]\ngpu_budget_preload = no_such_module\n")
    return pytester


def test_only_commands_selected_no_preload_warning(missing_preload):
    result = missing_preload.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "-k", "test_command")
    result.assert_outcomes(passed=1, deselected=1)
    assert "failed to import in the forkserver" not in result.stdout.str()


@pytest.mark.parametrize("xdist", [("-p", "no:xdist"), ("-n", "2")], ids=["serial", "xdist"])
def test_a_function_case_selected_keeps_the_warning(missing_preload, xdist):
    result = missing_preload.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", *xdist)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["preload: no_such_module failed to import in the forkserver*"])
