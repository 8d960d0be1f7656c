"""Facts a runner puts in ctx.meter.info before its steps reach the row of a child killed outright (SIGKILL, what
the kernel's OOM killer sends), as scenario-api.md promises: a host out-of-memory death is how a CPU host's
reproduction ends, and the row should still say what was trained (S3's and S4's trainable parameters)."""

from inner_session import rows

RUNNERS = '''
import os
import signal


def killed(ctx):
    ctx.meter.start("load")
    ctx.meter.info["trainable_params"] = 7
    ctx.meter.start("train_step_1", step=1)
    os.kill(os.getpid(), signal.SIGKILL)
'''

TESTS = '''

@pytest.mark.gpu_budget(ram="8 GiB")
def test_killed(gpu_budget):
    gpu_budget.measure(Scenario(name="k", run="runners:killed"))
'''


def test_facts_put_in_the_meter_reach_the_row_of_a_child_killed_by_sigkill(project_of, pytester):
    """They were sent only with the child's result or its raised error, so a SIGKILLed child's row had no facts."""
    inner = project_of(RUNNERS)(TESTS)
    result = inner.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1)
    row = rows(pytester)["test_killed"]
    assert "SIGKILL" in row["error"]["message"]
    assert row["info"]["trainable_params"] == 7
