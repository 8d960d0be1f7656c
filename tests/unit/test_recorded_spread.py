"""Baselines that know their own noise: an entry recorded over N runs keeps their spread, and the verdict allows it.

The rule (compare.Allowance): a figure may move by the larger of the test's
tolerance and SPREAD_MULTIPLE (6) times the spread stored for it; an entry
without a spread is judged at its tolerance alone, as before; a spread too wide
for the allowance to catch +5 % is a warning in the row, never a failure.
"""

import json
from pathlib import Path

import pytest

from gpu_budget import Scenario
from gpu_budget.declare.marks import gpu_budget as read_mark
from gpu_budget.judge import baselines, files
from gpu_budget.judge.compare import SPREAD_MULTIPLE, Allowance, judge
from gpu_budget.measure.device import DeviceInfo
from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.entry import Entry, Spread
from gpu_budget.model.figures import Peaks, Step
from gpu_budget.model.hardware import Hardware
from gpu_budget.model.result import Failure, Measurement, Verdict
from gpu_budget.session import case
from gpu_budget.session.options import Options

MiB = 2**20
DEFAULT = Tolerance(rel=0.005, abs=4 * MiB)


RECORDED_ON = {"malloc": "steady"}  # a file's entry names the setup it was recorded on


def m(ram: int, tensor: int | None = None) -> Measurement:
    return Measurement("ok", Peaks(ram=ram, ram_tree=ram, ram_tensor=tensor, vram_allocated=None))


def entry(ram: int, spread: int | None = None, runs: int = 4) -> Entry:
    stored = None if spread is None else Spread(runs, {"ram": spread, "ram_tree": spread})
    return Entry(peaks=Peaks(ram=ram, ram_tree=ram, vram_allocated=None), spread=stored, fingerprint=RECORDED_ON)


# -- the rule ---------------------------------------------------------------------------------------------

def test_the_multiple_is_the_default_tolerances_rule():
    assert SPREAD_MULTIPLE == 6  # benchmarks/RESULTS.md, section 4: "at least 6x the spread"


def test_without_a_stored_spread_the_tolerance_alone_judges_as_before():
    j = judge(m(412 * MiB), Budget(), entry(400 * MiB), DEFAULT, ci=True, update=False)
    assert (j.verdict, j.passed) == ("regression", False)
    assert "ram_tree 412.00 MiB > baseline 400.00 MiB +0.5% +4.00 MiB" in j.message
    assert "spread" not in j.message


def test_a_run_inside_its_stored_noise_passes_where_the_tolerance_alone_fails():
    """400 MiB with a 3 MiB spread over 4 runs: allowed 18 MiB, where the default allows 6 MiB."""
    j = judge(m(412 * MiB), Budget(), entry(400 * MiB, spread=3 * MiB), DEFAULT, ci=True, update=False)
    assert (j.verdict, j.passed) == ("pass", True), j.message
    assert j.message == "within budget and baseline"  # 18 MiB is 4.5 % of 400: +5 % is still caught
    assert Allowance(DEFAULT, 3 * MiB, 4).limit(400 * MiB) == 418 * MiB


def test_a_change_past_six_times_the_spread_fails_and_says_the_spread():
    j = judge(m(430 * MiB), Budget(), entry(400 * MiB, spread=2 * MiB), DEFAULT, ci=True, update=False)
    assert (j.verdict, j.passed) == ("regression", False)
    assert "ram_tree 430.00 MiB > baseline 400.00 MiB +12.00 MiB (6x its spread 2.00 MiB over 4 recorded runs)" \
        in j.message, j.message


def test_a_spread_narrower_than_the_tolerance_changes_nothing():
    """0.1 MiB stored: 6x is 0.6 MiB, under the default's 6 MiB at 400 MiB, so the tolerance judges, word for word."""
    j = judge(m(407 * MiB), Budget(), entry(400 * MiB, spread=MiB // 10), DEFAULT, ci=True, update=False)
    assert (j.verdict, j.passed) == ("regression", False)
    assert "> baseline 400.00 MiB +0.5% +4.00 MiB" in j.message and "warning" not in j.message


def test_an_improvement_must_clear_the_spread_too():
    inside = judge(m(390 * MiB), Budget(), entry(400 * MiB, spread=3 * MiB), DEFAULT, ci=True, update=False)
    assert inside.verdict == "pass", inside.message
    past = judge(m(370 * MiB), Budget(), entry(400 * MiB, spread=3 * MiB), DEFAULT, ci=True, update=False)
    assert past.verdict == "improved" and "-18.00 MiB (6x its spread 3.00 MiB" in past.message, past.message


def test_a_spread_too_wide_to_catch_five_percent_is_a_warning_not_a_failure():
    """4 MiB over 4 runs at 400 MiB allows 24 MiB, 6 % of the baseline: +5 % (20 MiB) would read as noise."""
    j = judge(m(401 * MiB), Budget(), entry(400 * MiB, spread=4 * MiB), DEFAULT, ci=True, update=False)
    assert (j.verdict, j.passed) == ("pass", True)
    assert "warning: ram_tree's stored spread 4.00 MiB over 4 runs is too wide to catch +5%: it allows " \
           "24.00 MiB (6.0% of the baseline)" in j.message, j.message
    narrow = judge(m(401 * MiB), Budget(), entry(400 * MiB, spread=3 * MiB), DEFAULT, ci=True, update=False)
    assert "warning" not in narrow.message  # 18 MiB, 4.5 %: +5 % is still caught


def test_the_warning_rides_along_a_regression_too():
    j = judge(m(500 * MiB), Budget(), entry(400 * MiB, spread=10 * MiB), DEFAULT, ci=True, update=False)
    assert (j.verdict, j.passed) == ("regression", False)
    assert "too wide to catch +5%" in j.message and "+60.00 MiB (6x its spread 10.00 MiB" in j.message


def test_a_metric_without_a_stored_spread_keeps_its_tolerance():
    """The spread is per metric: tensor bytes recorded without one are judged at the tolerance."""
    stored = Entry(peaks=Peaks(ram=400 * MiB, ram_tree=400 * MiB, ram_tensor=100 * MiB),
                   spread=Spread(4, {"ram_tree": 8 * MiB}))
    j = judge(m(410 * MiB, tensor=110 * MiB), Budget(), stored, DEFAULT, ci=True, update=False)
    assert j.verdict == "regression" and "ram_tensor 110.00 MiB > baseline 100.00 MiB +0.5% +4.00 MiB" in j.message
    assert "ram_tree" not in j.message.split("ram_tensor")[1]  # the tree stayed inside its own noise


# -- recording: the median run and the spread --------------------------------------------------------------

def test_the_spread_is_max_less_min_per_metric_held_by_every_run():
    runs = [m(400 * MiB, tensor=10), m(406 * MiB, tensor=12), m(401 * MiB, tensor=None)]
    spread = Spread.of([r.peaks for r in runs])
    assert spread.runs == 3 and spread.by_metric == {"ram": 6 * MiB, "ram_tree": 6 * MiB}


def test_the_run_kept_is_the_median_by_host_ram_whole():
    runs = [m(410 * MiB), m(400 * MiB), m(430 * MiB), m(405 * MiB)]
    assert baselines.median_run(runs).peaks.ram_tree == 410 * MiB  # of four: the upper of the middle two
    assert baselines.median_run(runs[:3]).peaks.ram_tree == 410 * MiB


# -- the file: round trip, old files -----------------------------------------------------------------------

def test_an_entry_with_its_spread_crosses_the_file_unchanged(tmp_path):
    path = tmp_path / "cpu" / "t.json"
    stored = entry(400 * MiB, spread=3 * MiB, runs=5)
    files.write(path, "tiny", {"test_x": stored.to_json()})
    raw = json.loads(path.read_text())["entries"]["tiny"]["test_x"]
    assert raw["spread"] == {"runs": 5, "by_metric": {"ram": 3 * MiB, "ram_tree": 3 * MiB}}
    back = baselines.lookup(files.load(path), "tiny", "test_x")
    assert back == stored and back.spread == Spread(5, {"ram": 3 * MiB, "ram_tree": 3 * MiB})


def test_a_spread_s_growth_crosses_the_file_and_one_without_writes_no_key(tmp_path):
    path = tmp_path / "t.json"
    grown = Entry(peaks=Peaks(ram=400 * MiB), spread=Spread(3, {"ram": MiB}, {"ram_tree": 2 * MiB}),
                  fingerprint=RECORDED_ON)
    files.write(path, "tiny", {"test_x": grown.to_json(), "test_y": entry(400 * MiB, spread=MiB, runs=3).to_json()})
    raw = json.loads(path.read_text())["entries"]["tiny"]
    assert raw["test_x"]["spread"]["growth"] == {"ram_tree": 2 * MiB} and "growth" not in raw["test_y"]["spread"]
    assert baselines.lookup(files.load(path), "tiny", "test_x") == grown


def test_a_spread_s_growth_per_block_size_crosses_the_file(tmp_path):
    path = tmp_path / "t.json"
    grown = Entry(peaks=Peaks(ram=400 * MiB), spread=Spread(3, {"ram": MiB}, {"ram_tree": 2 * MiB},
                                                             {"ram_tree": {2: MiB, 16: 4096}}), fingerprint=RECORDED_ON)
    files.write(path, "tiny", {"test_x": grown.to_json()})
    raw = json.loads(path.read_text())["entries"]["tiny"]
    assert raw["test_x"]["spread"]["blocks"] == {"ram_tree": {"2": MiB, "16": 4096}}
    back = baselines.lookup(files.load(path), "tiny", "test_x")
    assert back == grown and back.spread.growth_at("ram_tree", 16) == 4096 and back.spread.growth_at("ram_tree", 4) is None


def test_an_old_entry_without_a_spread_reads_and_writes_as_before(tmp_path):
    old = {"peaks": {"ram": 400 * MiB, "ram_tree": 400 * MiB}, "phases": {}, "tolerance": {"rel": 0.005, "abs": 4 * MiB},
           "fingerprint": {"malloc": "steady"}, "recorded": "2026-01-01", "scenario": "s", "fixes": [], "params": {}}
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schema": files.SCHEMA, "entries": {"tiny": {"test_x": old}}}))
    back = baselines.lookup(files.load(path), "tiny", "test_x")
    assert back.spread is None and "spread" not in back.to_json()
    assert back.to_json() == old  # a rewrite adds no key


@pytest.mark.parametrize("spread", [{"runs": 1, "by_metric": {}}, {"runs": 4, "by_metric": {"ram": -1}},
                                    {"runs": 4, "by_metric": {"watts": 3}}, {"runs": "4"}, [4],
                                    {"runs": 4, "by_metric": {"ram": None}}, {"runs": 4, "extra": 1},
                                    {"runs": 4, "growth": {"vram_reserved": 1}}, {"runs": 4, "growth": {"ram": -1}},
                                    {"runs": 4, "growth": [1]}, {"runs": 4, "blocks": {"ram_tree": {"1": 5}}},
                                    {"runs": 4, "blocks": {"ram_tree": {"x": 5}}}, {"runs": 4, "blocks": {"vram": {}}},
                                    {"runs": 4, "blocks": {"ram_tree": {"16": -1}}}, {"runs": 4, "blocks": [1]},
                                    {"runs": 4, "ranks": [1]}, {"runs": 4, "ranks": {"x": {"runs": 4}}},
                                    {"runs": 4, "ranks": {"1": {"runs": 1}}},
                                    {"runs": 4, "ranks": {"1": {"runs": 4, "ranks": {}}}}])
def test_a_broken_spread_is_named(tmp_path, spread):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schema": files.SCHEMA, "entries": {"tiny": {"test_x": {
        "peaks": {"ram": 1}, "spread": spread}}}}))
    with pytest.raises(files.BaselineError, match=r"'test_x'.*'spread'"):
        files.load(path)


# -- the option -------------------------------------------------------------------------------------------

def test_record_runs_is_one_by_default_and_read_from_the_ini_file_or_the_command_line(pytester):
    pytester.makeini("[pytest]\n")
    assert Options.from_config(pytester.parseconfig()).record_runs == 1
    pytester.makeini("[pytest]\ngpu_budget_record_runs = 4\n")
    assert Options.from_config(pytester.parseconfig()).record_runs == 4
    assert Options.from_config(pytester.parseconfig("--gpu-budget", "--gpu-budget-record-runs=6")).record_runs == 6


def test_each_side_of_an_against_run_records_once_whatever_the_ini_file_says():
    from gpu_budget.against.pairs import session_args

    args = session_args(["--gpu-budget-record-runs=4"], Path("r.json"), Path("b"))
    assert args.index("--gpu-budget-record-runs=1") > args.index("--gpu-budget-record-runs=4")  # the last one wins


# -- a case recorded over N runs (session/case.py, a stand-in child) -----------------------------------------

HARDWARE = Hardware.from_json({"key": "cpu-test", "threads": 1, "package_versions": {}, "torch": "x"})
CPU = DeviceInfo(cuda=False)


def run_case(tmp_path, children, *, update=False, runs=4):
    """case.run with a child that returns `children` one after another; the Outcome and how many children ran."""
    served = iter(children)
    asked = []

    def child(scenario, snapshot):
        asked.append(scenario)
        return next(served)

    opts = Options(enabled=True, update=update, baselines=tmp_path, scale="tiny", json=None, timeout=60, threads=1,
                   preload=(), record_runs=runs)
    c = case.Case(nodeid="m.py::t", module="m.py", name="t", scenario=Scenario(name="s", run="m:run"))
    return case.run(c, read_mark(ram="1 GiB"), opts, CPU, HARDWARE, child, ci=False), len(asked)


def keep(outcome):
    write = outcome.baseline_write
    files.write(Path(write.path), write.scale, {write.id: write.entry.to_json()})


def test_a_new_case_is_measured_n_times_and_keeps_the_median_and_the_spread(tmp_path):
    out, ran = run_case(tmp_path, [m(400 * MiB), m(412 * MiB), m(404 * MiB), m(420 * MiB)])
    assert ran == 4 and out.result.verdict == Verdict.NO_BASELINE and out.result.passed
    stored = out.baseline_write.entry
    assert stored.peaks.ram_tree == 412 * MiB and stored.spread == Spread(4, {"ram": 20 * MiB, "ram_tree": 20 * MiB})
    assert "no baseline yet: recorded; 4 fresh runs: the median run's figures kept (host RAM 412.00 MiB), spread " \
           "ram 20.00 MiB, ram_tree 20.00 MiB" in out.result.message
    assert out.result.measurement.peaks.ram_tree == 400 * MiB  # the row shows the judged run


def long_run(last_rise: float) -> Measurement:
    """200 flat steps at 400 MiB whose last ten rise `last_rise` MiB each: noisy step by step, flat over blocks."""
    ram = [400 * MiB + round(max(0, k - 190) * last_rise * MiB) for k in range(1, 201)]
    return Measurement("ok", Peaks(ram=ram[-1], ram_tree=ram[-1]),
                       steps=tuple(Step(step=k, ram=r, ram_tree=r) for k, r in enumerate(ram, 1)))


def test_long_runs_record_their_growth_per_block_size_and_the_row_says_the_largest(tmp_path):
    out, _ = run_case(tmp_path, [long_run(0.25), long_run(0.5), long_run(0.25), long_run(0.25)])
    spread = out.baseline_write.entry.spread
    assert spread.growth["ram_tree"] == MiB // 2 and set(spread.blocks["ram_tree"]) == {2, 4, 8, 16}
    assert spread.blocks["ram_tree"][16] == 0
    assert "largest growth ram_tree 512.00 KiB/step (0 B/step in blocks of 16 judged steps)" in out.result.message


def test_one_run_records_as_before(tmp_path):
    out, ran = run_case(tmp_path, [m(400 * MiB)], runs=1)
    assert ran == 1 and out.baseline_write.entry.spread is None and "fresh runs" not in out.result.message
    assert "spread" not in out.baseline_write.entry.to_json()


def test_a_further_run_that_fails_records_nothing(tmp_path):
    died = Measurement("error", Peaks(ram=300 * MiB), error=Failure(kind="killed", message="killed by SIGKILL"))
    out, ran = run_case(tmp_path, [m(400 * MiB), m(401 * MiB), died, m(402 * MiB)])
    assert ran == 3 and out.baseline_write is None
    assert (out.result.verdict, out.result.passed) == (Verdict.ERROR, False)
    assert "recording run 3 of 4 failed (killed): killed by SIGKILL; nothing recorded" in out.result.message


def test_update_re_records_an_entry_over_another_number_of_runs_and_leaves_a_matching_one(tmp_path):
    one, _ = run_case(tmp_path, [m(400 * MiB)], runs=1)
    keep(one)
    judged, ran = run_case(tmp_path, [m(400 * MiB)])  # no --gpu-budget-update: judged, not re-recorded
    assert ran == 1 and judged.baseline_write is None
    again, ran = run_case(tmp_path, [m(401 * MiB), m(403 * MiB), m(400 * MiB), m(402 * MiB)], update=True)
    assert ran == 4 and again.result.verdict == Verdict.PASS
    assert again.baseline_write.entry.spread.runs == 4
    assert again.result.message.startswith("within budget and baseline; baseline re-recorded; 4 fresh runs: ")
    keep(again)
    same, ran = run_case(tmp_path, [m(401 * MiB)], update=True)
    assert ran == 1 and same.baseline_write is None  # recorded over 4 already


def test_a_stored_spread_judges_the_next_run(tmp_path):
    first, _ = run_case(tmp_path, [m(400 * MiB), m(404 * MiB), m(402 * MiB), m(406 * MiB)])
    keep(first)  # median 404, spread 6 MiB: allowed 36 MiB
    inside, _ = run_case(tmp_path, [m(430 * MiB)])
    assert inside.result.verdict == Verdict.PASS, inside.result.message
    past, _ = run_case(tmp_path, [m(441 * MiB)])
    assert past.result.verdict == Verdict.REGRESSION and "6x its spread 6.00 MiB over 4 recorded runs" in past.result.message
