"""The CPU gate's growth case fails a planted leak on its declaration alone: memtests/test_s5_growth.py, unchanged,
in a gated session with GPU_BUDGET_PLANT_LEAK_MIB=0.5 (S5's loop keeps 0.5 MiB of each step's conv features, a leak
its 44 steps read as steady step by step, and in blocks of 4 as growth) and no baseline to compare with, fails by its
growth projected to steps=10_000 against its budget. The clean case's and
the planted one's readings over fresh sessions are benchmarks/RESULTS.md section 5i."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MEMTEST = ROOT / "memtests" / "test_s5_growth.py"


def test_a_planted_leak_fails_the_s5_growth_case(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)  # no baseline: recorded in pytester's folder, not a failure
    monkeypatch.setenv("GPU_BUDGET_PLANT_LEAK_MIB", "0.5")
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "--gpu-budget", str(MEMTEST),
                                           "--gpu-budget-baselines", str(pytester.path / "baselines"),
                                           "--gpu-budget-json", str(report))
    result.assert_outcomes(failed=1)
    (row,) = json.loads(report.read_text())["results"]
    assert row["baseline"] is None and row["info"]["kept_hidden_bytes"] == 44 * 2**19, row["info"]
    assert row["peaks"]["ram_tree"] < row["budget"]["ram"]  # the run's own peak is within the budget
    (projection,) = row["growth_projection"]["projections"]
    assert projection["grows"] and projection["breaks"], projection
    assert projection["interval"][0] > 0 and projection["at_step"] == 10_000, projection
    result.stdout.fnmatch_lines(["*host RAM grows * MiB/step over steps *, in blocks of 4 judged steps*at step 10,000 > budget 683.00 MiB*"])
