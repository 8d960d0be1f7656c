"""The committed run of benchmarks/env_failure_cost.py: a remembered failure is reported without trying, in a
fraction of the attempt's time, and --gpu-budget-update tries it again."""

import json
from pathlib import Path

import pytest

RESULT = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "env_failure_cost.json"


@pytest.fixture(scope="module")
def by_kind() -> dict:
    sessions = json.loads(RESULT.read_text())["sessions"]
    out: dict = {}
    for s in sessions:
        out.setdefault(s["kind"], []).append(s)
    return out


def test_each_rep_ran_every_session_and_the_sweep_point_failed(by_kind):
    assert {len(v) for v in by_kind.values()} == {len(by_kind["tried"])} and len(by_kind["tried"]) >= 3
    for kind in ("tried", "remembered", "retried"):
        assert all(s["point_status"] == "error" and s["environment"]["error"] for s in by_kind[kind])
    assert all(s["environment"] is None for s in by_kind["plain"])


def test_only_the_remembered_session_did_not_try(by_kind):
    assert all(s["environment"].get("remembered") is True for s in by_kind["remembered"])
    assert not any(s["environment"].get("remembered") for s in by_kind["tried"] + by_kind["retried"])
    slowest_lookup = max(s["environment"]["seconds"] for s in by_kind["remembered"])
    fastest_try = min(s["environment"]["seconds"] for s in by_kind["tried"] + by_kind["retried"])
    assert slowest_lookup * 100 < fastest_try
