"""A measured child that died: an out-of-memory death reproduces an expected over-budget failure, other deaths do not."""

from gpu_budget.judge.compare import judge
from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Failure, Measurement

GiB = 2**30
TOL = Tolerance(rel=0.005, abs=4 * 2**20)


def died(kind, ram=GiB, vram=None, message="CUDA out of memory. Tried to allocate 2.00 GiB"):
    return Measurement("error", Peaks(ram=ram, vram_allocated=vram), error=Failure(kind=kind, message=message))


def verdict(measurement, budget, expect="over-budget"):
    j = judge(measurement, budget, None, TOL, ci=True, update=False, expect=expect)
    return j.verdict, j.passed, j.write_baseline


def test_an_oom_death_under_an_expected_over_budget_reproduces_it():
    assert verdict(died("oom", vram=70 * GiB), Budget(vram=74 * GiB)) == ("over-budget", True, False)
    j = judge(died("oom", vram=70 * GiB), Budget(vram=74 * GiB), None, TOL, ci=True, update=False, expect="over-budget")
    assert "died of out-of-memory (CUDA out of memory. Tried to allocate 2.00 GiB)" in j.message
    assert "GPU allocated 70.00 GiB" in j.message  # what was seen before it died, a lower bound


def test_an_oom_death_without_the_expectation_is_an_error():
    assert verdict(died("oom", vram=70 * GiB), Budget(vram=74 * GiB), expect=None) == ("error", False, False)


def test_a_kill_counts_only_when_the_peak_seen_before_it_already_broke_the_budget():
    kill = "killed by SIGKILL (the kernel's OOM killer sends SIGKILL)"
    assert verdict(died("killed", ram=13 * GiB, message=kill), Budget(ram=12 * GiB)) == ("over-budget", True, False)
    assert verdict(died("killed", ram=11 * GiB, message=kill), Budget(ram=12 * GiB)) == ("error", False, False)


def test_other_deaths_stay_errors_even_past_the_budget():
    for kind in ("exception", "timeout", "crash"):
        assert verdict(died(kind, ram=13 * GiB, message="boom"), Budget(ram=12 * GiB)) == ("error", False, False)


def test_a_crash_by_another_signal_does_not_reproduce_it_even_past_the_budget():
    """Only SIGKILL is what the kernel's OOM killer sends: a segfault or an abort after the peak broke the budget is a
    crash, not the reproduction. Before, any signal passed: "over budget as expected: host RAM peak 13.00 GiB > budget
    12.00 GiB before the child was killed by SIGSEGV"."""
    for signal in ("SIGSEGV", "SIGABRT", "SIGBUS"):
        crash = died("killed", ram=13 * GiB, message=f"killed by {signal}")
        assert verdict(crash, Budget(ram=12 * GiB)) == ("error", False, False), signal
    command = died("killed", ram=13 * GiB, message="command 'train' was killed by SIGSEGV")
    assert verdict(command, Budget(ram=12 * GiB)) == ("error", False, False)
    command = died("killed", ram=13 * GiB, message="command 'train' was killed by SIGKILL")
    assert verdict(command, Budget(ram=12 * GiB)) == ("over-budget", True, False)
