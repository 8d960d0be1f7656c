"""The fail-safe's line for a session that measured nothing says what it knows: a budget test that failed without a
row (its xdist worker killed mid-measure, an error before measure()) is counted, never said not to have reached
measure()."""

from pathlib import Path

from gpu_budget.judge import failsafe
from gpu_budget.model.result import Result


def _findings(**over) -> list[str]:
    args = {"selected": 2, "rows": [], "probes": 0, "require_gpu": False, "ci": False, "update": False,
            "folder": Path("/nonexistent/cpu-x86_64"), "hardware_key": "cpu-x86_64", "cuda": lambda: False}
    return failsafe.nothing_measured(**{**args, **over})


def test_a_test_that_failed_without_a_row_is_counted_not_said_to_have_missed_measure():
    assert _findings(selected=1, without_rows=1) == [
        ("1 memory-budget test(s) selected, none measured: 1 failed without a row in the table (named in the gate's "
         "failure)")]


def test_it_is_counted_beside_the_rows_reasons():
    skipped = Result("t::a", "s", "tiny", verdict="skipped", passed=True, message="needs a CUDA GPU")
    assert _findings(rows=[skipped], without_rows=1) == [
        ("2 memory-budget test(s) selected, none measured: 1 x needs a CUDA GPU; 1 failed without a row in the table "
         "(named in the gate's failure)")]


def test_without_any_the_line_is_as_before():
    assert _findings() == ["2 memory-budget test(s) selected, none measured: none reached measure()"]


def test_the_count_is_read_back_from_the_gates_own_line():
    line = failsafe.failed_without_rows({"t::a": "boom", "t::b": "crashed"}, ["t::a", "t::b", "t::c"], [])
    assert failsafe.without_rows_in([line, "another problem"]) == 2
    assert failsafe.without_rows_in(["another problem"]) == 0


def test_a_test_that_left_no_row_and_did_not_fail_is_counted_too():
    """Before: one test skipped by the gate (no CUDA) beside one that called pytest.skip() before measure() read
    '2 memory-budget test(s) selected, none measured: 1 x needs a CUDA GPU': the second of the two unaccounted for."""
    skipped = Result("t::a", "s", "tiny", verdict="skipped", passed=True, message="needs a CUDA GPU")
    assert _findings(rows=[skipped]) == [
        "2 memory-budget test(s) selected, none measured: 1 x needs a CUDA GPU; 1 never reached measure()"]
    labelled = Result("t::b::x", "s", "tiny", verdict="skipped", passed=True, message="needs a CUDA GPU", label="x")
    assert _findings(rows=[skipped, labelled]) == [  # one row each, two tests: nothing left over
        "2 memory-budget test(s) selected, none measured: 2 x needs a CUDA GPU"]
