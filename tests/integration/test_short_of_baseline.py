"""A training script that now stops before the steps its baseline measured (a loop cut short, a flag that skips the
training) fails naming the steps it missed, where it read "improved" and passed; --gpu-budget-update records it."""

import json
import sys

SCRIPT = '''
import os
import gpu_budget

gpu_budget.phase("load")
held = [b"\\x01" * (40 * 2**20)]
for _ in range(int(os.environ["STEPS"])):
    gpu_budget.step()
    held.append(b"\\x01" * (8 * 2**20))
'''

TEST = f'''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_train(gpu_budget):
    gpu_budget.measure(Scenario(name="train", command=[{sys.executable!r}, "train.py"]))
'''


def gate(pytester, monkeypatch, steps: int, *args: str):
    monkeypatch.setenv("STEPS", str(steps))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json", *args)
    return result, json.loads((pytester.path / "r.json").read_text())["results"][0]


def test_a_script_that_stops_short_of_its_baselines_steps_fails_and_an_update_records_it(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(test_train=TEST)
    (pytester.path / "train.py").write_text(SCRIPT)
    result, row = gate(pytester, monkeypatch, 6)
    result.assert_outcomes(passed=1)
    assert row["verdict"] == "no-baseline" and list(row["phases"]) == [
        "run", "load", *(f"train_step_{n}" for n in range(1, 7))], list(row["phases"])

    result, row = gate(pytester, monkeypatch, 2)
    result.assert_outcomes(failed=1)
    assert row["verdict"] == "error", (row["verdict"], row["message"])
    assert row["message"].startswith("the run did not reach 4 of the 8 phases its baseline measured "
                                     "(train_step_3..6; it measured load, run, train_step_1..2)"), row["message"]
    assert row["change"]["ram_tree"] < 0  # lower: read "improved" and passed before

    result, row = gate(pytester, monkeypatch, 2, "--gpu-budget-update")
    result.assert_outcomes(passed=1)
    assert row["message"].endswith("(train_step_3..6); baseline updated"), row["message"]
    result, row = gate(pytester, monkeypatch, 2)
    result.assert_outcomes(passed=1)
    assert row["verdict"] == "pass", row["message"]
