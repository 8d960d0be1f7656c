"""against/bisect.py: a launcher case's commit is judged rank by rank, and its line shows the figure that decided (the
rank that moved, with its change against that rank's reference), not the worst rank's; the reference line names the
rank its figure is (the worst rank's), and a line of another rank names the reference value its change is from."""

import json
from dataclasses import replace

from gpu_budget.against import bisect as bisect_module
from gpu_budget.against.bisect import Found, StepSettings, Tried, _figure, try_commit
from gpu_budget.model.budget import Tolerance
from gpu_budget.model.figures import Peaks, RankFigures
from gpu_budget.model.result import Measurement, Result, Verdict

MiB = 2**20
GOOD, TRIED = "a" * 40, "b" * 40


def launched(*rank_trees: int) -> Result:
    """A launcher case's row: one figure per rank, its peaks its worst rank's, as measure/ranks.py makes them."""
    worst = max(rank_trees)
    ranks = tuple(RankFigures(rank=k, peaks=Peaks(ram=tree, ram_tree=tree)) for k, tree in enumerate(rank_trees))
    measurement = Measurement(status="ok", peaks=Peaks(ram=worst, ram_tree=worst))
    return Result(nodeid="t.py::test_ddp", scenario="ddp", scale="tiny", verdict=Verdict("no-baseline"), passed=True,
                  message="ok", tolerance=Tolerance(rel=0.005, abs=4 * MiB),
                  measurement=replace(measurement, ranks=ranks))


def _tried(tmp_path, monkeypatch, reference: Result, measured: Result) -> Tried:
    monkeypatch.setattr(bisect_module, "measure", lambda *args, **kwargs: (measured, ""))
    monkeypatch.setattr(bisect_module, "subject", lambda top, commit: "grow rank 0")
    settings = StepSettings(tmp_path, tmp_path, ("-k", "test_ddp"), tmp_path, tmp_path / "tried.jsonl", reference,
                            reference.peaks.ram_tree)
    return try_commit(settings, TRIED)


def test_the_line_of_a_commit_shows_the_rank_that_moved(tmp_path, monkeypatch):
    """Rank 0 grows 40 -> 104 MiB under rank 1's 120 MiB. Before: "moved ram_tree 120.00 MiB (+0.0%)", rank 1's
    unchanged figure, beside a reason naming rank 0: the line hid what moved."""
    tried = _tried(tmp_path, monkeypatch, launched(40 * MiB, 120 * MiB), launched(104 * MiB, 120 * MiB))
    line = tried.line(120 * MiB)
    assert tried.outcome == "moved" and (tried.figure, tried.value, tried.base) == ("rank 0 ram_tree", 104 * MiB, 40 * MiB)
    assert line.startswith(f"{TRIED[:10]} moved     rank 0 ram_tree 104.00 MiB (+160.0% from 40.00 MiB)  grow rank 0: "), line
    assert "rank 0 ram_tree head 104.00 MiB (lowest of 1) > base 40.00 MiB (highest of 1)" in line, line
    # as written to the log `git bisect run`'s steps share, and listed again at the end
    (logged,) = [Tried(**json.loads(text)) for text in (tmp_path / "tried.jsonl").read_text().splitlines()]
    reference = Tried(GOOD, "good", "reference", "rank 1 ram_tree", 120 * MiB)
    assert f"  {line}" in Found(reference, (logged,), TRIED, "").text().splitlines()


def test_a_commit_within_shows_the_rank_nearest_its_limit(tmp_path, monkeypatch):
    """Every rank within its tolerance: the line shows the rank whose figure came nearest its limit, its change
    against that rank's reference (rank 0: 40 -> 42 MiB), not the worst rank's unchanged figure."""
    tried = _tried(tmp_path, monkeypatch, launched(40 * MiB, 120 * MiB), launched(42 * MiB, 120 * MiB))
    assert tried.outcome == "within" and tried.why == ""
    assert "within    rank 0 ram_tree 42.00 MiB (+5.0% from 40.00 MiB)  grow rank 0" in tried.line(120 * MiB)


def test_a_case_of_one_process_keeps_its_host_ram_line(tmp_path, monkeypatch):
    """No launcher: the figure is the case's host RAM, as before."""
    one = replace(launched(100 * MiB), measurement=replace(launched(100 * MiB).measurement, ranks=()))
    grown = replace(one, measurement=replace(one.measurement, peaks=Peaks(ram=200 * MiB, ram_tree=200 * MiB)))
    tried = _tried(tmp_path, monkeypatch, one, grown)
    assert tried.outcome == "moved" and "moved     ram_tree 200.00 MiB (+100.0%)" in tried.line(100 * MiB)


def test_the_reference_line_names_the_rank_its_figure_is(tmp_path, monkeypatch):
    """The reference line showed "reference ram_tree 120.00 MiB", the worst rank's (rank 1) figure, above a line
    "rank 0 ram_tree 104.00 MiB (+160.0%)": read together, 120 -> 104 MiB was a rise of 160 %. The reference line now
    names its rank, and a line of another rank the value its change is from; a line of the reference's own rank
    reads against the reference line, with no value repeated."""
    good = launched(40 * MiB, 120 * MiB)
    name, value = _figure(good)
    assert (name, value) == ("rank 1 ram_tree", 120 * MiB)
    reference = Tried(GOOD, "good", "reference", name, value)
    assert reference.line() == f"{GOOD[:10]} reference rank 1 ram_tree 120.00 MiB  good"
    other = _tried(tmp_path, monkeypatch, good, launched(104 * MiB, 120 * MiB))
    same = _tried(tmp_path, monkeypatch, good, launched(40 * MiB, 180 * MiB))
    lines = Found(reference, (other, same), TRIED, "").text().splitlines()
    assert lines[1] == f"  {GOOD[:10]} reference rank 1 ram_tree 120.00 MiB  good"
    assert lines[2].startswith(f"  {TRIED[:10]} moved     rank 0 ram_tree 104.00 MiB (+160.0% from 40.00 MiB)  "), lines
    assert lines[3].startswith(f"  {TRIED[:10]} moved     rank 1 ram_tree 180.00 MiB (+50.0%)  "), lines


def test_the_reference_line_of_one_process_names_no_rank():
    one = replace(launched(100 * MiB), measurement=replace(launched(100 * MiB).measurement, ranks=()))
    assert _figure(one) == ("ram_tree", 100 * MiB)
