"""Work a runner does between two `with ctx.meter.phase()` blocks, or after the last, is measured: it was in no phase,
and a spike there passed any budget."""

import json

from inner_session import ONE_CASE


def test_a_spike_after_the_last_block_is_gated(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners='''
import os


def run(ctx):
    with ctx.meter.phase("load"):
        pass
    spike = b"\\x01" * (int(os.environ["SPIKE_MIB"]) << 20)
    del spike
    with ctx.meter.phase("train_step_1", step=1):
        pass
    spike = b"\\x01" * (int(os.environ["SPIKE_MIB"]) << 20)  # an evaluation outside any block
''', test_mem=ONE_CASE)
    monkeypatch.setenv("SPIKE_MIB", "400")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1)
    row = json.loads((pytester.path / "r.json").read_text())["results"][0]
    assert row["verdict"] == "over-budget", row["verdict"]
    assert list(row["phases"]) == ["load", "after load", "train_step_1", "after train_step_1"], list(row["phases"])
    assert row["peaks"]["ram_tree"] >= 400 * 2**20
    monkeypatch.setenv("SPIKE_MIB", "10")
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json").assert_outcomes(passed=1)
    row = json.loads((pytester.path / "r.json").read_text())["results"][0]
    assert list(row["phases"]) == ["load", "after load", "train_step_1", "after train_step_1"], list(row["phases"])
