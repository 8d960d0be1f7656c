"""What S1's clean Trainer script grows by rests on a committed report: benchmarks/results/growth_arenas.json (5j).

RESULTS.md 5c and docs/declaring.md name the mechanism: the script's Python lists of floats keep pymalloc's arenas
mapped over its first steps, a lump at a time, until they stop. The report must show it in the gate's own runs:
arenas added as the script runs as is, none with its data in numpy format (no Python floats); a run long enough for
them reads steady, and the catalogue's largest leak still fails at that length.
"""

import json

import pytest
from doc_checkers import GROWTH_ARENAS_RUN, declaring_growth_arenas
from doc_figures import ROOT

from benchmarks.growth_arenas import CASES, summary


@pytest.fixture(scope="module")
def run() -> dict:
    return json.loads((ROOT / GROWTH_ARENAS_RUN).read_text())


def test_the_run_is_complete_with_every_case_in_every_session(run):
    assert run["complete"] and len(run["sessions"]) >= 8
    assert {k: tuple(v) for k, v in run["cases"].items()} == CASES
    for session in run["sessions"]:
        assert sorted(r["case"] for r in session["rows"]) == sorted(CASES)
        for row in session["rows"]:
            assert [s["step"] for s in row["steps"]] == list(range(1, CASES[row["case"]][0] + 1)), row["case"]
            assert (row["arenas"] is not None) == CASES[row["case"]][1].startswith("counted"), row["case"]


def test_the_arenas_fill_from_python_floats(run):
    """As is, each run kept several arenas past step 1's, and its steps rose with them; with the data in numpy format
    at most one was added and the steps stayed within a MiB of step 2's."""
    s = summary(run)
    counted, numpy = s["arenas counted, 30 steps"], s["arenas counted, data in numpy format, 10 steps"]
    assert min(counted["added"]) >= 3 and min(counted["rise"]) >= 3 * 2**20
    assert max(numpy["added"]) <= 1 and max(numpy["rise"]) < 2**20


def test_a_run_past_the_filling_reads_steady_and_still_fails_the_leak(run):
    s = summary(run)
    assert s["as is, 30 steps"]["grows"] == 0
    (leak,) = [c for label, c in s.items() if "kept" in label]
    assert leak["breaks"] == leak["sessions"]


def test_the_paragraph_is_the_committed_run():
    declaring_growth_arenas()
