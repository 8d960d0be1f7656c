"""A measured child that died: an out-of-memory death reproduces an expected over-budget failure where the memory it ran
out of could hold the budget; other deaths do not."""

from gpu_budget.judge.compare import judge
from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Failure, Measurement
from gpu_budget.model.room import Room

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


def room_verdict(measurement, budget, room):
    j = judge(measurement, budget, None, TOL, ci=True, update=False, expect="over-budget", room=room)
    return j.verdict, j.passed, j.message


def test_a_host_oom_death_below_the_ram_budget_shows_only_a_small_host():
    """A host of 16 GiB (or a cgroup of 16 GiB) cannot reach a 24 GiB budget: its MemoryError is no reproduction.
    Before, it passed: "over budget as expected: the child died of out-of-memory (MemoryError: ...), the reported
    failure itself"."""
    for kind, message in (("builtins.MemoryError", "Unable to allocate 8.00 GiB"),
                          ("RuntimeError", "DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 GiB")):
        dead = Measurement("error", Peaks(ram=15 * GiB), error=Failure(kind="oom", type=kind, message=message))
        verdict, passed, said = room_verdict(dead, Budget(ram=24 * GiB), Room(ram=16 * GiB))
        assert (verdict, passed) == ("skipped", True), said
        assert "this host's memory 16.00 GiB" in said and "below the RAM budget 24.00 GiB" in said, said
        assert room_verdict(dead, Budget(ram=12 * GiB), Room(ram=16 * GiB))[:2] == ("over-budget", True)
        assert room_verdict(dead, Budget(ram=24 * GiB), Room())[:2] == ("over-budget", True)  # room unknown: as before


def test_a_kill_past_the_budget_reproduces_it_whatever_the_host_holds():
    """The budget was broken as measured before the kill: the reproduction stands (a finished run at that peak
    would be over budget too)."""
    kill = died("killed", ram=13 * GiB, message="killed by SIGKILL (the kernel's OOM killer sends SIGKILL)")
    assert room_verdict(kill, Budget(ram=12 * GiB), Room(ram=8 * GiB))[:2] == ("over-budget", True)


def test_a_gpu_oom_under_a_card_cap_below_the_vram_budget_is_an_error():
    """card="T4" caps the allocator at 14.75 GiB: its out-of-memory death says nothing of a 24 GiB budget, on any
    host. Before, it passed as the reproduction."""
    capped = died("oom", vram=14 * GiB, message="out of memory as on T4 (14.75 GiB), in phase train_step_2 (step 2): "
                                                "CUDA out of memory. Tried to allocate 2.00 GiB")
    verdict, passed, said = room_verdict(capped, Budget(vram=24 * GiB), Room(vram=int(14.75 * GiB), card="T4 (14.75 GiB)"))
    assert (verdict, passed) == ("error", False), said
    assert "card='T4 (14.75 GiB)' caps the caching allocator at 14.75 GiB, below the VRAM budget 24.00 GiB" in said
    assert room_verdict(capped, Budget(vram=int(14.75 * GiB)), Room(vram=int(14.75 * GiB), card="T4"))[:2] == \
        ("over-budget", True)  # budgeted at the card (a card's default): the death under its cap is the reproduction


def test_an_oom_death_in_a_memory_no_budget_bounds_reproduces_nothing():
    """A GPU case budgeted on VRAM alone that runs out of host RAM, or a RAM budget's case that runs out of GPU
    memory, did not reproduce its budget. Before, any out-of-memory error passed."""
    host = Measurement("error", Peaks(ram=GiB, vram_allocated=GiB),
                       error=Failure(kind="oom", type="builtins.MemoryError", message=""))
    assert verdict(host, Budget(vram=74 * GiB)) == ("error", False, False)
    assert verdict(died("oom", vram=GiB), Budget(ram=12 * GiB)) == ("error", False, False)
