"""The summary lines the README and docs/baselines.md quote are what report/tally.py writes, not typed copies; so is a
withheld entry's row (session/held.py)."""

from pathlib import Path

from doc_figures import document, flat

from gpu_budget.model.result import FAILED_AFTER, Result
from gpu_budget.report.tally import withheld_line, written_line
from gpu_budget.report.terminal import table_rows
from gpu_budget.session.held import WITHHELD

HERE = Path("/project")
TRAIN = "/project/baselines/cpu-x86_64/test_train.json"


def test_the_readme_quotes_the_first_run_line_as_the_gate_writes_it():
    line = written_line({TRAIN: 1}, update=False, here=HERE)
    assert f"`{line}`" in flat(document("README.md")), f"README should quote:\n{line}"


def test_docs_baselines_quotes_its_start():
    line = written_line({TRAIN: 2}, update=False, here=HERE)
    quoted = line[:line.index(" under CI")] + " ...`"
    assert f"`{quoted}" in flat(document("docs/baselines.md")), f"docs/baselines.md should quote:\n{quoted}"


def test_docs_baselines_quotes_the_withheld_line_and_row_as_the_gate_writes_them():
    page = flat(document("docs/baselines.md"))
    line = withheld_line(["test_train.py::test_train"], update=False)
    assert f"`{line}`" in page, f"docs/baselines.md should quote:\n{line}"
    assert f"`{WITHHELD}`" in page, f"docs/baselines.md should quote:\n{WITHHELD}"


def test_the_docs_quote_a_test_failing_after_measure_as_the_gate_says_it():
    """The verdict cell and the reason of a case the gate passed in a test that failed after measure()."""
    row = Result("t.py::test_x", "s", "tiny", "no-baseline", True, "", test_outcome="failed", test_failure="assert 0")
    cell = table_rows([row])[0][-1]
    for path in ("docs/measuring.md", "docs/ci.md"):
        page = flat(document(path))
        assert "`test FAILED`" in page and f"`{FAILED_AFTER}: " in page, path
    assert f"`{cell}`" in flat(document("docs/measuring.md"))
    assert f"`at head: {FAILED_AFTER}: " in flat(document("docs/against.md"))
