"""`python -m gpu_budget estimate`: a case it cannot estimate is a failure naming the case and why, not an exit 0."""

import json
from pathlib import Path

from gpu_budget.estimate.cli import main as cli

S5_SPEC = str(Path(__file__).resolve().parents[2] / "memtests" / "s5_generic_oom" / "scenarios.py") + ":S5"


def own_case(tmp_path) -> str:
    """A user's own Scenario, whose runner has no estimator builder registered."""
    (tmp_path / "mine.py").write_text("from gpu_budget import Scenario\n\nMINE = Scenario(name='mine', run='train:run')\n")
    return f"{tmp_path / 'mine.py'}:MINE"


def test_a_case_it_cannot_estimate_exits_1_saying_why(tmp_path, capsys):
    assert cli([own_case(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "no estimate (LookupError: no estimator builder for scenario 'mine' (runner train:run)" in err
    assert err.rstrip().endswith(f"not estimated: 1 of 1 case(s) ({own_case(tmp_path)}): see above")


def test_the_cases_it_can_estimate_are_still_shown_beside_one_it_cannot(tmp_path, capsys):
    out = tmp_path / "est.json"
    assert cli([S5_SPEC, f"mine={own_case(tmp_path)}", "--json", str(out)]) == 1
    assert [r["label"] for r in json.loads(out.read_text())["estimates"]] == [S5_SPEC]
    captured = capsys.readouterr()
    assert f"| {S5_SPEC} |" in captured.out or "| S5 |" in captured.out
    assert "not estimated: 1 of 2 case(s) (mine): see above" in captured.err
