"""`estimate -o table.md --json v.json`: a case it could not estimate is named, with why, in the files it writes.

The terminal says why on stderr and exits 1; the files are what a reader keeps (a CI artifact, a page), and a
table that leaves a case out without a word reads as every case estimated. `--render` of the saved file says it too.
"""

import json
from pathlib import Path

from gpu_budget.estimate.cli import main as cli

S5_SPEC = str(Path(__file__).resolve().parents[2] / "memtests" / "s5_generic_oom" / "scenarios.py") + ":S5"


def own_cases(tmp_path) -> tuple[str, str]:
    """A user's own function case with no estimator builder, and a command case (the README's `train.py`)."""
    (tmp_path / "mine.py").write_text(
        "import sys\nfrom gpu_budget import Scenario\n\nMINE = Scenario(name='mine', run='train:run')\n"
        "TRAIN = Scenario(name='train', command=[sys.executable, 'train.py'])\n")
    return f"{tmp_path / 'mine.py'}:MINE", f"{tmp_path / 'mine.py'}:TRAIN"


def test_the_files_written_and_their_render_name_each_case_not_estimated_and_why(tmp_path, capsys):
    """Before: table.md held S5's row alone and v.json no word of `mine` or `train`; `--render v.json` printed S5's
    row alone, exit 0: two cases asked for were gone without a trace."""
    mine, train = own_cases(tmp_path)
    table, saved = tmp_path / "table.md", tmp_path / "v.json"
    assert cli([S5_SPEC, f"mine={mine}", f"train={train}", "-o", str(table), "--json", str(saved)]) == 1
    printed = capsys.readouterr().out
    said = {"mine": "mine: not estimated (LookupError: no estimator builder for scenario 'mine' (runner train:run)",
            "train": "train: not estimated (scenario 'train' is a command case (Scenario(command=...))"}
    for line in said.values():
        assert line in table.read_text() and line in printed, table.read_text()
    assert set(json.loads(saved.read_text())["not_estimated"]) == {"mine", "train"}

    assert cli(["--render", str(saved)]) == 0
    rendered = capsys.readouterr().out
    assert all(line in rendered for line in said.values()), rendered
    assert f"| {S5_SPEC} |" in rendered


def test_a_saved_file_whose_every_case_was_not_estimated_renders_why(tmp_path, capsys):
    """Before: `--render` refused it as holding no estimate, 'nothing to render', and the reason was nowhere."""
    mine, _ = own_cases(tmp_path)
    saved = tmp_path / "v.json"
    assert cli([f"mine={mine}", "--json", str(saved)]) == 1
    capsys.readouterr()
    assert cli(["--render", str(saved)]) == 0
    assert "mine: not estimated (LookupError: no estimator builder" in capsys.readouterr().out
