"""A baseline recorded over N fresh runs keeps their spread, and the next sessions are judged against it.

The user's script (a command case, noisy_script.py) holds 32 MiB plus a random
amount that moves from run to run: four recorded runs spread 4 to 8 MiB, which
the gate allows 6x (24 to 48 MiB), where the default tolerance (0.5 % + 4 MiB)
allows about 4.3 MiB at this size. A judged run holds a fixed amount
(FIXED_MIB): one 10 to 12 MiB above the recorded run passes inside the case's
noise and fails once the spread is taken out of the file; one 64 MiB or more
above it still fails. The project is a folder with a `.git` folder only
(test_record_runs_git.py does the same in a real git repository, committed).
"""

import json

import noisy_script
import pytest

from gpu_budget.declare.marks import DEFAULT_TOLERANCE

MiB = 2**20


@pytest.fixture
def project(pytester, monkeypatch):
    """A git checkout without an ini file: memtests/test_noisy.py gating memtests/held.py."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("FIXED_MIB", raising=False)
    (pytester.path / ".git").mkdir()
    noisy_script.write(pytester.path)
    return pytester


def test_recorded_over_four_runs_a_case_is_judged_against_its_own_noise(project, monkeypatch):
    recorded, row = noisy_script.run(project, "record", "--gpu-budget-update", "--gpu-budget-record-runs=4")
    recorded.assert_outcomes(passed=1)
    assert (project.path / "memtests" / "counter").read_text() == "4", row["message"]  # four fresh children ran
    (path,) = (project.path / "baselines").glob("*/test_noisy.json")
    stored = json.loads(path.read_text())
    entry = stored["entries"]["tiny"]["memtests/test_noisy.py::test_noisy"]
    spread = entry["spread"]
    assert spread["runs"] == 4 and 3 * MiB < spread["by_metric"]["ram_tree"] < 9 * MiB, spread
    assert "4 fresh runs: the median run's figures kept" in row["message"], row["message"]
    then = entry["peaks"]["ram_tree"]

    monkeypatch.setenv("FIXED_MIB", "16")  # 10 to 12 MiB over the median run: inside 6x its spread
    inside, row = noisy_script.run(project, "inside")
    inside.assert_outcomes(passed=1)
    assert row["verdict"] == "pass", row["message"]
    assert "stored spread" in row["message"] and "too wide to catch +5%" in row["message"]  # said, not failed
    now = row["peaks"]["ram_tree"]
    assert now > DEFAULT_TOLERANCE.limit(then), (now, then)  # the default tolerance alone fails this run

    del entry["spread"]  # the same entry as one run records it: judged at the tolerance alone
    path.write_text(json.dumps(stored))
    alone, row = noisy_script.run(project, "alone")
    alone.assert_outcomes(failed=1)
    assert row["verdict"] == "regression" and "+0.5% +4.00 MiB" in row["message"], row["message"]
    path.write_text(json.dumps({**stored, "entries": {"tiny": {"memtests/test_noisy.py::test_noisy": {**entry, "spread": spread}}}}))

    monkeypatch.setenv("FIXED_MIB", "70")  # a planted +64 MiB (at least) over the median run
    planted, row = noisy_script.run(project, "planted")
    planted.assert_outcomes(failed=1)
    assert row["verdict"] == "regression", row["message"]
    assert "over 4 recorded runs" in row["message"] and "6x its spread" in row["message"], row["message"]
