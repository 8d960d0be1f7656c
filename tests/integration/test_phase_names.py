"""A phase name with a space at either end or a line break is refused under the gate, naming it, as a measure()
label is: `"load "` reads as `"load"` in every message and table, so a run that marks it beside a baseline's "load"
was told it "did not reach load ... it measured load", and a line break broke the lines that name it. Outside the
gate phase() stays a no-op: a script run by hand does not crash on it."""

import os
import subprocess
import sys

from inner_session import rows

RUNNERS = '''
def padded(ctx):
    with ctx.meter.phase(ctx.params["name"]):
        held = b"\\x01" * (8 << 20)
    return {}
'''

CASES = '''
import sys

@pytest.mark.gpu_budget(ram="2 GiB")
def test_function(gpu_budget):
    gpu_budget.measure(Scenario(name="padded", run="runners:padded", params={"name": "load "}))

@pytest.mark.gpu_budget(ram="2 GiB")
def test_command(gpu_budget):
    code = "import gpu_budget\\ngpu_budget.phase('train\\\\n')\\nx = b'1' * (8 << 20)"
    gpu_budget.measure(Scenario(name="script", command=[sys.executable, "-c", code]))
'''


def test_a_phase_name_with_a_space_at_either_end_or_a_line_break_is_refused_under_the_gate(project_of):
    pytester = project_of(RUNNERS)(CASES)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=2)
    found = rows(pytester)
    assert "phase name 'load ': expected one line of text with no space at either end" in found["test_function"]["message"]
    assert "phase name 'train\\n': expected one line of text with no space at either end" in found["test_command"]["message"]
    assert not (pytester.path / "baselines").exists() or not list((pytester.path / "baselines").rglob("*.json"))


def test_outside_the_gate_such_a_phase_name_is_a_no_op():
    env = {k: v for k, v in os.environ.items() if k != "GPU_BUDGET_SOCKET"}
    code = "import gpu_budget\nwith gpu_budget.phase('load '):\n    pass\ngpu_budget.phase('train\\n')\nprint('ran')"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False, timeout=60)
    assert (done.returncode, done.stdout) == (0, "ran\n"), done.stderr
