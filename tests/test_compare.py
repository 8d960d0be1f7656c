"""Verdicts: budget first, then baseline with tolerance, with expected failures and CI rules."""

from gpu_budget.baselines import Tolerance
from gpu_budget.compare import judge
from gpu_budget.scenario import Budget

MiB = 2**20
TOL = Tolerance(rel=0.02, abs=16 * MiB)


def m(ram, status="ok"):
    return {"status": status, "peaks": {"ram": ram, "vram_allocated": None},
            "error": None if status == "ok" else {"kind": "killed", "message": "killed by SIGKILL"}}


def base(ram):
    return {"peaks": {"ram": ram, "vram_allocated": None}}


def test_within_tolerance_passes():
    j = judge(m(1000 * MiB + 30 * MiB), Budget(), base(1000 * MiB), TOL, ci=True, update=False)
    assert (j.verdict, j.passed) == ("pass", True)


def test_planted_ten_percent_fails():
    j = judge(m(1100 * MiB), Budget(), base(1000 * MiB), TOL, ci=True, update=False)
    assert (j.verdict, j.passed) == ("regression", False)
    assert j.change["ram"] == 0.1


def test_improvement_is_reported_and_passes():
    j = judge(m(800 * MiB), Budget(), base(1000 * MiB), TOL, ci=True, update=False)
    assert (j.verdict, j.passed, j.write_baseline) == ("improved", True, False)
    assert "--gpu-budget-update" in j.message


def test_update_turns_a_regression_into_a_recorded_change():
    j = judge(m(1100 * MiB), Budget(), base(1000 * MiB), TOL, ci=True, update=True)
    assert (j.passed, j.write_baseline) == (True, True)


def test_budget_is_gated_even_under_update():
    j = judge(m(2 * 2**30), Budget(ram=2**30), None, TOL, ci=False, update=True)
    assert (j.verdict, j.passed) == ("over-budget", False)


def test_missing_baseline_fails_only_under_ci():
    assert judge(m(MiB), Budget(), None, TOL, ci=True, update=False).passed is False
    j = judge(m(MiB), Budget(), None, TOL, ci=False, update=False)
    assert (j.verdict, j.passed, j.write_baseline) == ("no-baseline", True, True)


def test_expected_over_budget_passes_only_while_broken():
    over = judge(m(2 * 2**30), Budget(ram=2**30), base(2 * 2**30), TOL, ci=True, update=False, expect="over-budget")
    assert (over.verdict, over.passed) == ("over-budget", True)
    lost = judge(m(MiB), Budget(ram=2**30), base(MiB), TOL, ci=True, update=False, expect="over-budget")
    assert lost.passed is False and "reproduction is lost" in lost.message


def test_child_failure_is_an_error_with_the_peak_seen():
    j = judge(m(700 * MiB, status="error"), Budget(ram=2**30), None, TOL, ci=False, update=True)
    assert (j.verdict, j.passed) == ("error", False)
    assert "700.00 MiB" in j.message and "SIGKILL" in j.message


def tree(ram_tree, ram):
    return {"status": "ok", "peaks": {"ram": ram, "ram_tree": ram_tree, "vram_allocated": None}, "error": None}


def test_the_budget_gates_the_process_tree_not_the_main_process():
    j = judge(tree(1100 * MiB, 500 * MiB), Budget(ram=1000 * MiB), None, TOL, ci=False, update=False)
    assert (j.verdict, j.passed) == ("over-budget", False)
    assert "host RAM peak 1.07 GiB (process tree; main process 500.00 MiB) > budget 1000.00 MiB" in j.message


def test_a_tree_baseline_is_compared_on_the_tree():
    j = judge(tree(1100 * MiB, 500 * MiB), Budget(), {"peaks": {"ram": 500 * MiB, "ram_tree": 1000 * MiB}}, TOL,
              ci=True, update=False)
    assert (j.verdict, j.passed) == ("regression", False) and set(j.change) == {"ram_tree"}


def test_a_baseline_without_the_tree_is_compared_on_the_main_process_and_says_so():
    j = judge(tree(1100 * MiB, 500 * MiB), Budget(), base(500 * MiB), TOL, ci=True, update=False)
    assert (j.verdict, j.passed) == ("pass", True) and set(j.change) == {"ram"}
    assert "the baseline holds the main process only" in j.message
    j = judge(tree(500 * MiB, 500 * MiB), Budget(), base(500 * MiB), TOL, ci=True, update=False)
    assert j.message == "within budget and baseline"  # no descendants: nothing left uncompared, nothing to say
    j = judge(tree(1100 * MiB, 600 * MiB), Budget(), base(500 * MiB), TOL, ci=True, update=False)
    assert (j.verdict, j.passed) == ("regression", False)  # a main-process regression still fails
