"""The markdown tables (the step summary, the --against table and PR comment) keep one cell per column whatever a
node id holds: a parametrized id with '|' would otherwise split its row into columns of its own. The step summary's heading
counts what was measured."""

import re

from gpu_budget.against.render import Outcome
from gpu_budget.against.render import markdown as against_markdown
from gpu_budget.against.verdict import judge_case
from gpu_budget.model.budget import Tolerance
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Measurement, Result, Verdict
from gpu_budget.report.summary import markdown

MiB = 2**20
ODD = "t.py::test_odd[a|b]::a|b"


def _row(nodeid: str, verdict: str = "pass", passed: bool = True, test_outcome: str | None = None) -> Result:
    measured = Measurement(status="ok", peaks=Peaks(ram=40 * MiB, ram_tree=40 * MiB))
    return Result(nodeid=nodeid, scenario="s", scale="tiny", verdict=Verdict(verdict), passed=passed, message="ok",
                  tolerance=Tolerance(rel=0.005, abs=4 * MiB), measurement=measured, test_outcome=test_outcome,
                  test_failure="assert 1 == 0" if test_outcome == "failed" else None)


def _cells(line: str) -> list[str]:
    """A markdown table row's cells, as GitHub splits them: on each '|' not escaped."""
    cells, cell, escaped = [], "", False
    for ch in line.strip()[1:-1]:
        if ch == "|" and not escaped:
            cells.append(cell.strip())
            cell = ""
        else:
            cell += ch
        escaped = ch == "\\" and not escaped
    return [*cells, cell.strip()]


def _table(text: str) -> list[list[str]]:
    return [_cells(line) for line in text.splitlines() if line.startswith("|")]


def test_the_step_summary_keeps_a_pipe_in_a_node_id_in_its_cell():
    table = _table(markdown([_row("t.py::test_plain"), _row(ODD)], None))
    assert len({len(cells) for cells in table}) == 1  # every row as many cells as the header
    assert table[-1][0] == ODD.replace("|", "\\|") and table[-1][-1] == "pass"


def test_the_against_table_keeps_a_pipe_in_a_node_id_in_its_cell():
    case = judge_case(ODD, [_row(ODD, "no-baseline")], [_row(ODD, "no-baseline")])
    outcome = Outcome(ref="main", base_commit="a" * 40, head_commit="b" * 40, head_dirty=False, cases=(case,), runs=())
    table = _table(against_markdown(outcome))
    assert len({len(cells) for cells in table}) == 1
    assert table[-1][0] == ODD.replace("|", "\\|") and table[-1][-1] == "pass"


def test_the_step_summary_heading_counts_a_skipped_case_as_not_measured():
    skipped = _row("t.py::test_cuda_only", "skipped")
    text = markdown([_row("t.py::test_a"), skipped, _row("t.py::test_b", "over-budget", passed=False)], None)
    assert text.startswith("### GPU budget: 2 measured, 1 failed\n")


def test_the_step_summary_heading_counts_an_error_that_ran_no_child_as_failed_not_measured():
    """A case whose environment could not be made (or whose declaration the gate refused) ran no child: its row's
    figures are all "-". Before, the heading read "2 measured, 1 failed"."""
    unmade = Result(nodeid="t.py::test_env", scenario="s", scale="tiny", verdict=Verdict.ERROR, passed=False,
                    message="its environment cannot be made: pip failed", measurement=None)
    text = markdown([_row("t.py::test_a"), unmade], None)
    assert text.startswith("### GPU budget: 1 measured, 1 failed\n")
    assert "- **t.py::test_env**: its environment cannot be made: pip failed" in text.splitlines()


def test_the_step_summary_counts_a_test_failing_after_measure_as_failed_and_says_why():
    """The gate passed the row, pytest failed its test on its own assertion: the heading agrees with pytest, the
    verdict cell says so, and the reason is listed; a row the gate failed is said as before, not twice."""
    rows = [_row("t.py::test_a", test_outcome="passed"), _row("t.py::test_after", "no-baseline", test_outcome="failed"),
            _row("t.py::test_b", "over-budget", passed=False, test_outcome="failed")]
    text = markdown(rows, None)
    assert text.startswith("### GPU budget: 3 measured, 2 failed\n")
    assert [cells[-1] for cells in _table(text)[2:]] == ["pass", "no-baseline, test FAILED", "over-budget FAIL"]
    assert "- **t.py::test_after**: its test failed after measure(): assert 1 == 0" in text.splitlines()
    assert "- **t.py::test_b**: ok" in text.splitlines()


def test_a_verdict_cell_names_pytests_skip_xfail_or_xpass_beside_the_gates_word():
    """pytest's outcome follows the gate's verdict, never replaces it; a case the gate skipped says "skipped" once."""
    rows = [_row("t.py::test_skip", "no-baseline", test_outcome="skipped"),
            _row("t.py::test_xfail", "over-budget", passed=False, test_outcome="xfailed"),
            _row("t.py::test_xpass", test_outcome="xpassed"), _row("t.py::test_gate_skip", "skipped", test_outcome="skipped"),
            _row("t.py::test_plain", test_outcome="passed")]
    assert [cells[-1] for cells in _table(markdown(rows, None))[2:]] == [
        "no-baseline, test skipped", "over-budget FAIL, test xfailed", "pass, test xpassed", "skipped", "pass"]


def test_the_against_summary_lists_a_case_whose_base_test_failed_after_measure():
    base = _row("t.py::test_a", "no-baseline", test_outcome="failed")
    case = judge_case("t.py::test_a", [base], [_row("t.py::test_a", "no-baseline", test_outcome="passed")])
    outcome = Outcome(ref="main", base_commit="a" * 40, head_commit="b" * 40, head_dirty=False, cases=(case,), runs=())
    text = against_markdown(outcome)
    assert text.startswith("### GPU budget against `main`: passed (1 pass)")
    assert ("- **pass** `t.py::test_a`: within the tolerance of base; at base its test failed after measure(): "
            "assert 1 == 0 (not judged: a base is not the head's to fix)") in text.splitlines()


def test_a_multi_line_failure_message_stays_inside_its_list_item_as_written():
    """A child's error of several lines: its first line in the item, '<' and '>' escaped so GitHub's sanitiser keeps
    `<class 'int'>`; the rest in a fenced block indented into the item, so a '# heading', a blank line, a '---' or a
    '> quote' neither becomes a heading, rule or quote nor ends the list."""
    rest = ["# heading", "", "---", "> quoted", "got <class 'int'> in <module>", "``` a fence of its own"]
    message = "\n".join(["TypeError: expected <class 'str'>", *rest])
    row = _row("t.py::test_err", "error", passed=False).but(message=message)
    lines = markdown([row], None).splitlines()
    start = lines.index("- **t.py::test_err**: TypeError: expected \\<class 'str'\\>")
    item = lines[start + 1:start + 3 + len(rest)]
    assert item == ["  ````", *(f"  {line}" if line else "" for line in rest), "  ````"], item
    assert lines[start + 3 + len(rest):start + 4 + len(rest)] in ([], [""])  # the item ends where the block does


NAMELESS = "t.py::test_x[<script>alert(1)</script>]::a*b*`c`_d_~~e~~\\|f"


def _read(cell: str) -> str:
    """What a reader sees of a cell: CommonMark's backslash escapes undone; no escape, no markup."""
    assert not re.search(r"(?<!\\)(\\\\)*[`*<>&~]", cell), cell  # every active character escaped
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", cell)


def test_a_node_id_holding_html_or_markdown_is_shown_as_written_in_the_step_summary():
    """A parametrized id with `<script>`, backticks, '*', '_' or '~~': GitHub's sanitiser would eat the tag and the
    rest would turn into code, emphasis or strikethrough, in the table's cell and in the failure's list item."""
    text = markdown([_row(NAMELESS, "over-budget", passed=False)], None)
    (cells,) = _table(text)[2:]
    assert _read(cells[0]) == NAMELESS
    (item,) = [line for line in text.splitlines() if line.startswith("- **")]
    assert _read(item[len("- **"):item.index("**: ")]) == NAMELESS


def test_the_against_summary_lists_a_case_of_an_odd_id_and_message_as_written():
    """A backtick in the id would end its code span early; '<' in a test's failure would be eaten as a tag."""
    nodeid = "t.py::test_a[`q`]"
    base = _row(nodeid, "no-baseline", test_outcome="failed").but(test_failure="AssertionError: <b>bold</b>")
    case = judge_case(nodeid, [base], [_row(nodeid, "no-baseline", test_outcome="passed")])
    outcome = Outcome(ref="main", base_commit="a" * 40, head_commit="b" * 40, head_dirty=False, cases=(case,), runs=())
    (reason,) = [line for line in against_markdown(outcome).splitlines() if line.startswith("- **pass**")]
    assert reason.startswith("- **pass** ``t.py::test_a[`q`]``: ") and "\\<b>bold\\</b>" in reason, reason


def test_a_plot_or_snapshot_file_is_linked_as_written_whatever_its_folder_and_name_hold():
    """A plot of test_ids[a/b]::lab|`x`*_y_<b> is named plots/test_mem__test_ids-a-b__lab-x-_y_-b.png: its link's text
    rendered "-_y_-" as an italic y, and a plots folder with a space in its path (--gpu-budget-plots="my plots") ended
    the link at the space, leaving the raw markdown. The text is escaped and the target a URL; in an artifact listing
    the path is one code span, whatever backticks it holds."""
    from pathlib import Path

    row = _row("t.py::test_a").but(plot="/w/my plots (ci)/t__x-_y_-b.png", snapshot="/w/snaps/t`x`.pickle")
    text = markdown([row], None, base=Path("/w"))
    assert "- t.py::test_a: [my plots (ci)/t\\_\\_x-\\_y\\_-b.png](/w/my%20plots%20%28ci%29/t__x-_y_-b.png)" in text, text
    assert "- t.py::test_a: [snaps/t\\`x\\`.pickle](/w/snaps/t%60x%60.pickle)" in text, text
    listed = markdown([row], None, base=Path("/w"), artifacts="https://github.com/o/r/actions/runs/1")
    assert "- t.py::test_a: ``snaps/t`x`.pickle``" in listed, listed
    assert "- t.py::test_a: `my plots (ci)/t__x-_y_-b.png`" in listed, listed
