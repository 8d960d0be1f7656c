"""The step summary stays under GitHub's 1 MiB: a larger one is refused whole ("$GITHUB_STEP_SUMMARY upload aborted,
supports content up to a size of 1024k"), so a session of thousands of cases showed no summary at all."""

from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Measurement, Result, Verdict
from gpu_budget.report import summary

MiB = 2**20
WHY = "ram_tree 40.00 MiB > budget RAM 30.00 MiB (+33.3%); host RAM peak in phase train_step_3"


def _rows(n: int, failing: int) -> list[Result]:
    measured = Measurement(status="ok", peaks=Peaks(ram=40 * MiB, ram_tree=40 * MiB))
    return [Result(nodeid=f"tests/test_models.py::test_finetune_step[model_{i:04d}-batch8-fp16]::as-reported",
                   scenario="s", scale="tiny", verdict=Verdict.OVER_BUDGET if i < failing else Verdict.PASS,
                   passed=i >= failing, message=WHY if i < failing else "ok", budget=Budget(ram=30 * MiB),
                   tolerance=Tolerance(rel=0.005, abs=4 * MiB), measurement=measured) for i in range(n)]


def test_a_summary_of_thousands_of_cases_is_cut_under_a_mib_saying_how_many_rows_and_where_the_rest_are():
    """3000 failing cases: 1.08 MiB, refused whole by GitHub."""
    text = summary.markdown(_rows(3000, 3000), None, report="out/report.json")
    assert len(text.encode()) <= summary.STEP_SUMMARY_LIMIT, len(text.encode())
    assert text.startswith("### GPU budget: 3000 measured, 3000 failed")  # the heading counts every case
    kept = sum(1 for line in text.splitlines() if line.startswith("| tests/test_models.py::"))
    assert 0 < kept < 3000
    assert (f"> **{3000 - kept} of 3000 rows left out** of this summary (GitHub shows a step summary only under "
            "1 MiB); every one is in `out/report.json`") in text


def test_the_failing_rows_are_kept_before_the_passing_ones_and_the_table_keeps_its_order():
    rows = _rows(400, 0)
    rows[300:303] = [r.but(verdict=Verdict.OVER_BUDGET, passed=False, message=WHY) for r in rows[300:303]]  # late
    full = summary.markdown(rows, None)
    text = summary.markdown(rows, None, room=len(full.encode()) // 4)
    assert len(text.encode()) <= len(full.encode()) // 4
    table = [line for line in text.splitlines() if line.startswith("| tests/")]
    assert sum("over-budget FAIL" in line for line in table) == 3
    numbers = [int(line.split("model_")[1][:4]) for line in table]
    assert numbers == sorted(numbers) and {300, 301, 302} <= set(numbers)
    assert "rows left out** of this summary" in text
    assert "the full table is in this job's log" in text  # no JSON report written


def test_a_summary_that_fits_is_whole_and_the_room_is_what_the_file_leaves(tmp_path, monkeypatch):
    rows = _rows(40, 2)
    assert "left out" not in summary.markdown(rows, None)
    path = tmp_path / "summary.md"
    path.write_text("x" * (summary.STEP_SUMMARY_LIMIT - 3000))  # written before in this step: most of its room
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(path))
    summary.append_step_summary(rows, None)
    assert path.stat().st_size <= summary.STEP_SUMMARY_LIMIT
    assert "left out" in path.read_text()


def test_the_against_summary_of_thousands_of_cases_is_cut_the_same_way():
    """--gpu-budget-against's summary: one table line per figure and a line per case that is not a plain pass."""
    from gpu_budget.against.render import Outcome
    from gpu_budget.against.render import markdown as against_markdown
    from gpu_budget.against.verdict import judge_case

    rows = _rows(3000, 0)
    cases = tuple(judge_case(r.nodeid, [r], [r]) for r in rows)
    outcome = Outcome(ref="main", base_commit="a" * 40, head_commit="b" * 40, head_dirty=False, cases=cases, runs=())
    full = against_markdown(outcome)
    text = against_markdown(outcome, room=len(full.encode()) // 3, report="against.json")
    assert len(text.encode()) <= len(full.encode()) // 3
    assert text.startswith("### GPU budget against `main`: passed (3000 pass)")
    kept = sum(1 for line in text.splitlines() if line.startswith("| tests/test_models.py::"))
    assert f"> **{3000 - kept} of 3000 cases left out** of this summary" in text and 0 < kept < 3000
