"""The terminal table's columns line up on a terminal when a node id or label holds wide characters (CJK, an emoji)."""

import unicodedata

import tabulate

from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Measurement, Result, Verdict
from gpu_budget.report import terminal

MiB = 2**20


def _columns(text: str) -> int:
    """The columns a terminal gives `text` (every character here is narrow or wide; none is zero-width)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _row(nodeid: str) -> Result:
    measurement = Measurement(status="ok", peaks=Peaks(ram=27 * MiB, ram_tree=27 * MiB))
    return Result(nodeid=nodeid, scenario="w", scale="tiny", verdict=Verdict("no-baseline"), passed=True, message="",
                  measurement=measurement)


def test_a_wide_label_keeps_its_row_in_line_with_the_others():
    """Before, tabulate padded by len(): the row of `学習🚀` (3 characters, 6 columns) ran 3 columns past the others."""
    table = terminal.terminal_table([_row("test_mem.py::test_wide::学習🚀"), _row("test_mem.py::test_wide::plain")])
    header, rule, wide, plain = table.splitlines()
    starts = {_columns(line[:line.index(word)]) for line, word in ((header, "scale"), (wide, "tiny"), (plain, "tiny"))}
    assert len(starts) == 1, table
    assert len({_columns(line.rstrip()) for line in (rule, wide, plain)}) == 1, table
    assert tabulate.WIDE_CHARS_MODE == (tabulate.wcwidth is not None)  # tabulate left as it was found
