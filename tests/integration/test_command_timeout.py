"""What a command case stopped at its timeout keeps: the phase it was in and the main process's figure, as fresh as
the tree's (isolate/forkserver.py, isolate/child.py)."""

import sys

from inner_session import rows

MiB = 2**20

SCRIPT = '''
import time
import gpu_budget

held = []
for _ in range(4):
    gpu_budget.step()
    held.append(b"\\x01" * (30 * 2**20))
time.sleep(100)
'''


def test_a_timed_out_script_keeps_its_open_step_and_its_main_figure(pytester, monkeypatch):
    """One process, 4 steps of 30 MiB, then asleep past --gpu-budget-timeout. The row read `RAM tree 131.11 MiB, RAM
    main 101.11 MiB` and its phases ended at train_step_3."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(train=SCRIPT, test_mem=f'''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_slow(gpu_budget):
    gpu_budget.measure(Scenario(name="slow", command=[{sys.executable!r}, "train.py"]))
''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-timeout=5",
                                           "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1)
    row = rows(pytester)["test_slow"]
    assert row["error"]["kind"] == "timeout"
    assert list(row["phases"])[-1] == "train_step_4", list(row["phases"])
    assert [s["step"] for s in row["steps"]] == [1, 2, 3, 4]
    last = row["phases"]["train_step_4"]
    assert last["ram_peak"] >= row["phases"]["train_step_3"]["ram_peak"] + 25 * MiB, last
    assert row["peaks"]["ram"] == row["peaks"]["ram_tree"], row["peaks"]  # one process: the tree is the script
