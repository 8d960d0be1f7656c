"""The summary line the README and docs/baselines.md quote is what report/tally.py writes, not a typed copy."""

from pathlib import Path

from doc_figures import document, flat

from gpu_budget.report.tally import written_line

HERE = Path("/project")
TRAIN = "/project/baselines/cpu-x86_64/test_train.json"


def test_the_readme_quotes_the_first_run_line_as_the_gate_writes_it():
    line = written_line({TRAIN: 1}, update=False, here=HERE)
    assert f"`{line}`" in flat(document("README.md")), f"README should quote:\n{line}"


def test_docs_baselines_quotes_its_start():
    line = written_line({TRAIN: 2}, update=False, here=HERE)
    quoted = line[:line.index(" under CI")] + " ...`"
    assert f"`{quoted}" in flat(document("docs/baselines.md")), f"docs/baselines.md should quote:\n{quoted}"
