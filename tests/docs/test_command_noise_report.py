"""The committed command-noise run (benchmarks/results/command_noise.json) meets the issue's targets.

A Trainer script gated as a command must repeat within 0.2 % over fresh
sessions, raise no false alarm and catch every planted +2 %. A re-run that
misses one fails here, so it cannot be committed without being seen.
"""

import json
from pathlib import Path

import pytest

from benchmarks.command_noise import COMMAND_NOISE_TARGETS, command_noise_summary

RESULT = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "command_noise.json"


@pytest.fixture(scope="module")
def run() -> dict:
    return json.loads(RESULT.read_text())


def test_the_run_is_complete_and_judged_under_the_default_tolerance(run):
    from gpu_budget.declare.marks import DEFAULT_TOLERANCE

    assert run["complete"]
    assert len(run["clean"]) == 10 and len(run["planted"]) == 10
    assert run["tolerance_at_run"] == {"rel": DEFAULT_TOLERANCE.rel, "abs": DEFAULT_TOLERANCE.abs}
    assert all(r["tolerance"] == run["tolerance_at_run"] for r in [*run["clean"], *run["planted"]])
    assert run["baseline"]["verdict"] == "no-baseline"  # recorded by the first session, not judged
    assert run["plant_bytes"] == int(run["baseline"]["ram_tree"] * run["fraction"]) and run["fraction"] == 0.02


def test_clean_sessions_spread_at_most_0_2_percent(run):
    assert command_noise_summary(run)["spread"] <= COMMAND_NOISE_TARGETS["spread"]


def test_no_clean_session_raised_an_alarm(run):
    assert command_noise_summary(run)["false_alarms"] == COMMAND_NOISE_TARGETS["false_alarms"]
    assert all(r["verdict"] == "pass" and r["passed"] for r in run["clean"])


def test_every_planted_2_percent_was_caught(run):
    summary = command_noise_summary(run)
    assert summary["caught"] == summary["planted"] == 10
    assert all(not r["passed"] for r in run["planted"])


def test_the_steps_reached_the_gate_as_phases(run):
    for r in [run["baseline"], *run["clean"], *run["planted"]]:
        assert [s["step"] for s in r["steps"]] == list(range(1, run["model"]["max_steps"] + 1))
