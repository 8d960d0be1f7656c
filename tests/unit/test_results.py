"""Typed results: a report row is Result.to_json(), and every committed report reads back into the same row."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gpu_budget.isolate import forkserver
from gpu_budget.measure.summary import Summary
from gpu_budget.model.figures import Peaks, PhaseRecord, Step
from gpu_budget.model.result import NO_PEAKS, Failure, Measurement, Result
from gpu_budget.report.summary import markdown
from gpu_budget.report.terminal import verdict_text
from gpu_budget.search.explore import Envelope, Exploration, explore
from gpu_budget.session.data import Explored, SessionData

REPORTS = sorted((Path(__file__).resolve().parents[2] / "benchmarks" / "results").glob("*.report.json"))


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.name)
def test_committed_report_rows_read_back_into_the_same_rows(path):
    report = json.loads(path.read_text())
    # a report of notes alone (a search's) or of explorations alone (one estimated without a GPU) has no row
    assert report["results"] or report.get("notes") or report.get("explorations"), path
    for explored in report.get("explorations") or ():
        assert Exploration.from_json(explored["exploration"]).to_json() == explored["exploration"], path
    for row in report["results"]:
        result = Result.from_json(row)
        assert result.measured == ("wall_seconds" in row)
        if report["version"] >= 2:  # rows from before budgets declared their origin, or rows recorded their test's
            # outcome, read them as None
            expected = {"budget_origin": None, "test_outcome": None, **row}
            assert json.dumps(result.to_json(), sort_keys=True) == json.dumps(expected, sort_keys=True)
        else:  # version 1: the main process only; the reader fills the tree's fields with None
            assert result.peaks.ram == row["peaks"]["ram"] and result.peaks.ram_tree is None


def test_a_case_that_ran_no_child_has_no_measurement_and_no_figures():
    skipped = Result("t.py::test_x", "s1", "real", verdict="skipped", passed=True, message="needs a CUDA GPU")
    row = skipped.to_json()
    assert "wall_seconds" not in row and row["peaks"] == NO_PEAKS.to_json() and row["phases"] == {}
    assert not skipped.measured and skipped.info == {} and skipped.error is None
    assert Result.from_json(row) == skipped


def test_a_labelled_result_belongs_to_its_test():
    result = Result("t.py::test_fix[lora]::lora", "s1", "tiny", "pass", True, "", label="lora")
    assert result.test_nodeid == "t.py::test_fix[lora]"


def test_a_rows_test_outcome_crosses_json_and_a_failure_after_measure_is_said():
    """A row the gate passed in a test that failed after measure() (its own assertion) says why it counts as failed;
    one the gate failed, or one whose test passed, says nothing more."""
    row = Result("t.py::test_x", "s1", "tiny", "no-baseline", True, "", test_outcome="failed",
                 test_failure="assert 20971520 == 0")
    assert row.to_json()["test_outcome"] == "failed" and row.to_json()["test_failure"] == "assert 20971520 == 0"
    assert Result.from_json(row.to_json()) == row
    assert row.failed_after == "its test failed after measure(): assert 20971520 == 0"
    assert row.but(passed=False).failed_after is None and row.but(test_outcome="passed").failed_after is None
    unknown = Result("t.py::test_x", "s1", "tiny", "pass", True, "")  # a row from before, or of an interrupted test
    assert unknown.to_json()["test_outcome"] is None and "test_failure" not in unknown.to_json()


def test_a_case_whose_test_failed_on_another_cases_verdict_did_not_fail_after_measure():
    """A test measuring two cases fails on the second's verdict: the first passed its check and the test's code did
    not fail after it. Before, its row said "its test failed after measure(): Failed: [gpu-budget over-budget] host
    RAM peak 147.66 MiB ... > budget 30.00 MiB", the other case's reason, and the summary counted it a second failure."""
    ran = Measurement(status="ok", peaks=Peaks(ram=40 * 2**20))
    row = Result("t.py::test_x::small", "s1", "tiny", "no-baseline", True, "", label="small", test_outcome="failed",
                 test_failure="Failed: [gpu-budget over-budget] host RAM peak 147.66 MiB > budget 30.00 MiB",
                 measurement=ran)
    assert row.failed_after is None and row.test_failed
    assert row.but(test_failure="Failed: [gpu-budget error] measured child failed (exception)").failed_after is None
    own = row.but(test_failure="AssertionError: assert 'gpu-budget' in info")  # the test's own assertion
    assert own.failed_after == "its test failed after measure(): AssertionError: assert 'gpu-budget' in info"
    over = Result("t.py::test_x::sized", "s1", "tiny", "over-budget", False, "host RAM peak 147.66 MiB > budget 30.00 MiB",
                  label="sized", test_outcome="failed", test_failure=row.test_failure, measurement=ran)
    page = markdown([row, over], None)
    assert page.startswith("### GPU budget: 2 measured, 1 failed\n") and "its test failed after measure()" not in page
    assert verdict_text(row) == "no-baseline, test FAILED"  # pytest's word on its test all the same


def test_a_measurement_from_the_child_keeps_its_phases_by_name_in_order():
    phases = (PhaseRecord("load", None, 1.0, 10, None, None), PhaseRecord("train_step_1", 1, 1.0, 30, None, None))
    summary = Summary(phases=phases, peaks=Peaks(ram=30, ram_tree=40), step_peaks=Peaks(ram=30),
                      steps=(Step(1, ram=30),), growth={"ram_per_step": None}, cuda=False)
    m = forkserver.measurement_of(summary, status="ok", info={"x": 1}, wall_seconds=1.5)
    assert list(m.phases) == ["load", "train_step_1"] and m.phases["train_step_1"].ram_peak == 30
    assert m.ok and m.ram == 40 and m.error_kind is None and m.info == {"x": 1}


def test_a_measurement_without_a_tree_figure_claims_no_bound_of_it():
    """A case with no host-RAM figure (a command ended before the first sample: 'unmeasured') says nothing of how the
    figure is read or how far off it can be. Before, its row held peaks of None beside the bound 'exact per process'
    and the tree's method, a claim of exactness about a figure that does not exist."""
    phases = (PhaseRecord("run", None, 0.01, None, None, None),)
    summary = Summary(phases=phases, peaks=Peaks(), step_peaks=Peaks(), steps=(), growth={}, cuda=False,
                      ram_tree_method="vmhwm+peak-of-summed-descendants",
                      ram_tree_bound="exact per process (every descendant read alive at a phase end or reported at "
                                     "its exit)")
    m = forkserver.measurement_of(summary, status="error", error=Failure("unmeasured", message="no host-RAM figure"))
    assert m.ram is None and m.ram_tree_bound is None and m.ram_tree_method is None
    measured = forkserver.measurement_of(replace(summary, peaks=Peaks(ram=30, ram_tree=40)), status="ok")
    assert measured.ram_tree_bound.startswith("exact per process") and measured.ram_tree_method is not None


def test_a_launcher_row_gives_each_rank_as_its_measurement_does():
    """memtests read a launcher case's ranks off the row gpu_budget.measure returns, as off a measurement."""
    report = json.loads((REPORTS[0].parent / "suite-tiny-all.report.json").read_text())
    row = next(Result.from_json(r) for r in report["results"] if r.get("ranks"))
    assert row.ranks == row.measurement.ranks and len(row.ranks) >= 2
    assert all(r.peaks.ram_tree for r in row.ranks)
    assert Result("t.py::a", "s", "tiny", "skipped", True, "").ranks == ()


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="Measurement status 'fine'"):
        Measurement("fine", NO_PEAKS)
    with pytest.raises(ValueError, match="no 'verdict'"):
        Result.from_json({"nodeid": "t.py::a", "scenario": "s", "scale": "tiny"})


def test_results_are_frozen():
    result = Result("t.py::a", "s", "tiny", "pass", True, "")
    with pytest.raises(AttributeError):
        result.verdict = "error"
    assert result.but(verdict="error").verdict == "error" and result.verdict == "pass"


def _exploration() -> Exploration:
    def tensors(k):
        return (k["batch"] * 10) << 20

    return explore("planted", Envelope({"batch": (1, 16)}), budget="100 MiB", estimate=tensors,
                   measure=lambda k: (20 << 20) + tensors(k), boundary="batch", max_examples=10, max_real_runs=5)


def test_an_exploration_crosses_json_unchanged_its_boundary_keyed_by_the_knobs_values():
    found = _exploration()
    back = Exploration.from_json(json.loads(json.dumps(found.to_json())))
    assert back == found and all(isinstance(v, int) for v in back.boundary.peaks)
    assert back.summary() == found.summary()


def test_session_data_crosses_json_and_merges_in_collection_order():
    def worker(nodeids):
        data = SessionData(order=["t.py::a", "t.py::b", "t.py::c"], selected=3, probes=1)
        for nodeid in nodeids:
            data.rows.append(Result(nodeid, "s", "tiny", "pass", True, "",
                                    measurement=Measurement("ok", NO_PEAKS, wall_seconds=1.0)))
            data.explorations.append(Explored(nodeid, _exploration()))
        data.collected["t.py"].update(n.split("::")[1] for n in nodeids)
        data.withheld.append(nodeids[0])  # its test did not pass: named in the controller's summary
        return SessionData.from_json(json.loads(json.dumps(data.to_json())))

    controller = SessionData()
    controller.merge(worker(["t.py::c", "t.py::a"]))
    controller.merge(worker(["t.py::b"]))
    assert [r.nodeid for r in controller.rows] == ["t.py::a", "t.py::b", "t.py::c"]
    assert [e.nodeid for e in controller.explorations] == ["t.py::a", "t.py::b", "t.py::c"]
    assert controller.collected == {"t.py": {"a", "b", "c"}} and controller.probes == 2 and controller.selected == 3
    assert all(r.measured for r in controller.rows)
    assert controller.withheld == ["t.py::c", "t.py::b"]


def test_a_rows_params_cross_json_and_a_row_from_before_them_reads_none():
    """The knobs a case ran with are in its row and read back; a row of a report written before rows carried them
    loads with None (not known), never an empty mapping (a case without knobs), and writes back without the key."""
    row = Result("t.py::test_x", "s1", "tiny", "pass", True, "", params={"batch_size": 2, "clips": [1.5, None]})
    assert row.to_json()["params"] == {"batch_size": 2, "clips": [1.5, None]}
    assert Result.from_json(row.to_json()) == row
    assert Result.from_json({**row.to_json(), "params": {}}).params == {}
    older = {k: v for k, v in row.to_json().items() if k != "params"}
    assert Result.from_json(older).params is None and "params" not in Result.from_json(older).to_json()
    with pytest.raises(ValueError, match=r"a row's params \[2\]: expected an object of knob name to value"):
        Result.from_json({**row.to_json(), "params": [2]})


def test_merged_rows_of_a_test_collected_twice_keep_the_serial_order():
    """`pytest t.py t.py --keep-duplicates` runs each test twice; the table lists them a, b, a, b under -n 2 as in a
    serial run, not both a's at the second a's place (the place of a node id's last occurrence)."""
    order = ["t.py::a", "t.py::b", "t.py::c", "t.py::a", "t.py::b", "t.py::c"]

    def worker(nodeids):
        data = SessionData(order=order, selected=6)
        data.rows.extend(Result(n, "s", "tiny", "pass", True, "") for n in nodeids)
        return data

    controller = SessionData()
    controller.merge(worker(["t.py::a", "t.py::c", "t.py::b"]))
    controller.merge(worker(["t.py::b", "t.py::a", "t.py::c"]))
    assert [r.nodeid for r in controller.rows] == order
