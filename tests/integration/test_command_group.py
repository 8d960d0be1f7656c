"""A command in a process group of its own, as a terminal starts a script (isolate/command.py OWN_GROUP).

A script, or a shell it runs, may end its process group as it exits (`trap
"kill 0" EXIT`, os.killpg(0, ...)). That group was the measuring child's
too, so the kill ended the measurement, and a run that went on (its own
process outlives a SIGTERM, as a script that checkpoints on one does) failed
as the measuring child's death.
"""

from inner_session import rows

MiB = 2**20

SCRIPT = '''
import os, signal, subprocess
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # saves its checkpoint and goes on, say
subprocess.run(["sh", "-c", "trap 'kill 0' EXIT; true"], check=False)  # a helper that ends its group as it exits
held = bytearray(64 << 20)
held[::4096] = b"x" * len(held[::4096])  # touched: resident
'''

CASE = '''
import sys
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_group(gpu_budget):
    gpu_budget.measure(Scenario(name="group", command=[sys.executable, "train.py"]))
'''


def test_a_kill_of_the_commands_process_group_leaves_the_measurement_standing(pytester, monkeypatch):
    """Before: "measured child failed (killed), host RAM peak seen so far ...: killed by SIGTERM; it was in phase
    'run'"."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(train=SCRIPT, test_mem=CASE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    row = rows(pytester)["test_group"]
    assert row.get("error") is None, row["error"]
    result.assert_outcomes(passed=1)
    assert row["info"]["exit_code"] == 0 and row["peaks"]["ram"] >= 64 * MiB, (row["info"], row["peaks"])
