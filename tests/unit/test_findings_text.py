"""FINDINGS.md shows names and notes nobody chose as written: a scenario's name, a case's label, a note's text and its
test's id keep their characters, not their effect as markdown or HTML (a '<script>' eaten, a '`' opening code, a
newline ending a list item)."""

import re

from gpu_budget.model.result import Note
from gpu_budget.report.findings import _scenario_lines, note_lines
from gpu_budget.report.findings_pairs import cell

ODD = "we|ird`<script>alert(1)</script>*_#"


def _read(text: str) -> str:
    """What a reader sees: CommonMark's backslash escapes undone."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


def test_a_scenario_name_with_markup_heads_its_section_as_written():
    note = Note("t.py::test_n", ODD, "tiny", "batch 8 fits")
    heading = _scenario_lines(ODD, [], [], [note], [], {}, {})[0]
    assert heading.startswith("## ") and "<script>" not in heading and _read(heading[3:]) == ODD


def test_a_note_of_several_lines_stays_one_list_item_and_its_test_id_one_code_span():
    note = Note("t.py::test_n[`q`]", "s", "tiny", "batch 8 fits\n# 16 does not <b>x</b>")
    (line, blank) = note_lines([note])
    assert blank == ""
    assert line == "- tiny: batch 8 fits # 16 does not \\<b>x\\</b> (``t.py::test_n[`q`]``)"


def test_a_table_cell_keeps_a_label_with_html_as_written():
    assert _read(cell("l|<script>")) == "l|<script>" and "<" not in cell("l|<script>").replace("\\<", "")
