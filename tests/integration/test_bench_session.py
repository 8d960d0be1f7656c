"""benchmarks/session.py, the fresh session that repeatability, detection and the setups sections measure through.

It reads the gate's typed Measurement; a dict-style read left behind by a
refactor broke every one of those benchmarks at their first case, unseen
until one was re-run. One real case in a fresh session keeps that path run.
"""

import importlib.util

import pytest

from benchmarks import session


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="needs the scenarios extra")
def test_a_fresh_session_measures_a_case_and_its_planted_bytes():
    clean, planted = session.fresh([{"case": "s5 as-reported"}, {"case": "s5 as-reported", "plant_bytes": 64 << 20}])
    assert clean["case"] == "s5 as-reported" and clean["position"] == 0 and clean["info_malloc"] == "steady"
    assert clean["peaks"]["ram"] > 256 << 20 and clean["step_ram"] <= clean["peaks"]["ram"]
    assert abs(planted["peaks"]["ram"] - clean["peaks"]["ram"] - (64 << 20)) < 8 << 20  # the plant, to the noise
