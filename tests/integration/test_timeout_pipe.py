"""A function case that waits on a pipe a process it started still holds: its timeout names that process."""

import json

RUNNERS = '''
import subprocess


def piped(ctx):
    ctx.meter.start("load")
    # the shell exits at once; its background sleep keeps the pipe's write end, so run() waits as long as it runs
    subprocess.run(["sh", "-c", "sleep 300 & echo started"], stdout=subprocess.PIPE)
'''


def test_a_timeout_names_the_process_holding_the_pipe_the_case_waits_on(project_of):
    """The timeout said "timed out after 2 s and was killed, with every process it started; it was in phase 'load'":
    where the run hung, not on what. The parent reads, before the kill, which of the child's processes hold open for
    writing a pipe the child reads."""
    pytester = project_of(RUNNERS)('''
@pytest.mark.gpu_budget(ram="4 GiB")
def test_piped(gpu_budget):
    gpu_budget.measure(Scenario(name="p", run="runners:piped"))
''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget",
                                           "--gpu-budget-timeout=2", "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1)
    (row,) = json.loads((pytester.path / "r.json").read_text())["results"]
    message = row["error"]["message"]
    assert row["error"]["kind"] == "timeout" and "it was in phase 'load'" in message, message
    assert "held open for writing by pid " in message and ": sleep 300" in message, message
