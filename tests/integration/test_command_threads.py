"""Marks a script sends from several threads at once (plugin/gpu_budget/script.py send: one message at a time).

Threads that marked at once shared one connection and read each other's
answers: one read two answers as one ("Extra data"), gave up marking, and
another waited on its answer for ever, so the script hung until the timeout.
"""

from inner_session import rows

SCRIPT = '''
import threading
import gpu_budget

gpu_budget.phase("load")


def work(name):
    for _ in range(50):
        gpu_budget.phase(name)


threads = [threading.Thread(target=work, args=(f"worker {k}",)) for k in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
'''

CASE = '''
import sys
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_threads(gpu_budget):
    gpu_budget.measure(Scenario(name="threads", command=[sys.executable, "train.py"]))
'''


def test_marks_from_several_threads_at_once_all_arrive_and_the_script_ends(pytester, monkeypatch):
    """Before: the case timed out ("timed out after 30 s ...; the last lines of its command's stderr: gpu_budget:
    cannot reach the measuring process at ... (Extra data: line 2 column 1 (char 13)); phases are not marked")."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(train=SCRIPT, test_mem=CASE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-timeout=30",
                                           "--gpu-budget-json=r.json")
    row = rows(pytester)["test_threads"]
    assert row.get("error") is None, row["error"]
    result.assert_outcomes(passed=1)
    assert row["info"]["phase_marks"] == 1 + 4 * 50, row["info"]
    assert "cannot reach the measuring process" not in result.stdout.str() + result.stderr.str()
