"""A row whose entry was not written (its test failed after measure(), its write failed, its xdist worker died) says
so in place of its verdict's claim, over --gpu-budget-record-runs too: the recorded runs' text follows the claim
there, and described an entry that was never written."""

import pytest

from gpu_budget.model.result import Result, Verdict
from gpu_budget.session import held
from gpu_budget.session.unwritten import unwritten_row

RUNS = "2 fresh runs: the median run's figures kept (host RAM 83.22 MiB), spread ram 0 B, ram_tree 0 B"
MOVED = "ram_tree 83.22 MiB > baseline 27.21 MiB +0.5% +4.00 MiB, first past its baseline in load"
FILE = " (baseline file /p/baselines/cpu-x86_64/test_w.json)"


def row(message: str, verdict: Verdict = Verdict.REGRESSION) -> Result:
    return Result(nodeid="t.py::test_w", scenario="s", scale="tiny", verdict=verdict, passed=True, message=message)


CASES = [  # the message the verdict and recording wrote, what a withheld entry's row says, what an unwritten one's says
    (f"{MOVED}; baseline updated; {RUNS}",
     f"{MOVED}; {held.WITHHELD}",
     f"{MOVED}; baseline not recorded, the write failed (disk full)"),
    (f"within budget and baseline; baseline re-recorded; {RUNS}",
     f"within budget and baseline; {held.WITHHELD}",
     "within budget and baseline; baseline not recorded, the write failed (disk full)"),
    (f"setup differs; baseline re-recorded on this setup; {RUNS}",
     f"setup differs; {held.WITHHELD}",
     "setup differs; baseline not recorded, the write failed (disk full)"),
    (f"no baseline yet: recorded; {RUNS}{FILE}",
     f"no baseline yet: {held.WITHHELD}{FILE}",
     f"no baseline yet: not recorded, the write failed (disk full){FILE}"),
    (f"{MOVED}; baseline updated",  # one run: as before
     f"{MOVED}; {held.WITHHELD}",
     f"{MOVED}; baseline not recorded, the write failed (disk full)"),
]


@pytest.mark.parametrize(("message", "withheld", "unwritten"), CASES)
def test_the_claim_and_the_recorded_runs_after_it_give_way_to_why_nothing_was_written(message, withheld, unwritten):
    assert held.claims_written(row(message))
    assert held.withheld_row(row(message)).message == withheld
    assert unwritten_row(row(message), "disk full").message == unwritten


def test_a_row_that_claims_no_write_is_left_with_why_after_it():
    plain = row("within budget and baseline", Verdict.PASS)
    assert not held.claims_written(plain)
    assert held.withheld_row(plain).message == f"within budget and baseline; {held.WITHHELD}"
