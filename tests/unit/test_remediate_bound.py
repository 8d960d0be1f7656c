"""What the bound leaves untried, said as it is: sets no cheaper than those run (ties are not costlier), and past the
count's cap, more than it."""

from failing_case import search

from gpu_budget import Fix, Scenario
from gpu_budget.declare import fixes
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Trial
from gpu_budget.report.terminal import remediation_text
from gpu_budget.search import remediate

TIES = tuple(fixes.register(Fix(f"trb_{i}", "train", f"test fix {i}")) for i in range(3))  # each costs 1
MANY = tuple(fixes.register(Fix(f"trb_many_{i}", "train", f"test fix {i}")) for i in range(8))  # 255 sets


def over(_candidate):
    return Trial((), "over-budget", Peaks(ram=100))


def test_sets_of_the_same_cost_left_untried_are_not_called_costlier():
    """Before: "none of the 1 real run (bound 1) passed; 6 costlier set(s) left untried", where trb_1 and trb_2 cost
    what trb_0 did."""
    text = remediation_text(search(Scenario(name="t", run="m:f", supports=TIES), over, max_runs=1))
    assert "passed; 6 set(s) left untried, none cheaper than those run (raise --gpu-budget-remediate-max-runs)" in text


def test_a_count_past_its_cap_is_said_as_more_than_the_cap(monkeypatch):
    """254 sets are left; the count stops at COUNT_CAP (100,000; 50 here, to stay quick). Before, with 2**20 - 2 left:
    "100001 costlier set(s) left untried", a figure no count measured."""
    from gpu_budget.report import terminal

    monkeypatch.setattr(remediate, "COUNT_CAP", 50)
    monkeypatch.setattr(terminal, "COUNT_CAP", 50)
    found = search(Scenario(name="t", run="m:f", supports=MANY), over, max_runs=1)
    assert found.untried > 50
    assert "passed; more than 50 sets left untried, none cheaper than those run" in remediation_text(found)
    few = search(Scenario(name="t", run="m:f", supports=MANY[:5]), over, max_runs=1)  # 30 left: counted
    assert "passed; 30 set(s) left untried" in remediation_text(few)
