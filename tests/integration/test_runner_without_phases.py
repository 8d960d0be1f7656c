"""A runner that marks no phase is measured whole, as one phase "run": it could pass any budget with no figure before."""

import json

from inner_session import ONE_CASE


def test_a_runner_without_phases_is_one_phase_and_its_budget_can_fail(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners="import os\n\ndef run(ctx):\n    held = b'\\x01' * (int(os.environ['HOLD_MIB']) << 20)\n"
                                "    return {}\n",
                        test_mem=ONE_CASE)
    monkeypatch.setenv("HOLD_MIB", "400")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1)
    row = json.loads((pytester.path / "r.json").read_text())["results"][0]
    assert row["verdict"] == "over-budget" and list(row["phases"]) == ["run"], (row["verdict"], list(row["phases"]))
    assert row["peaks"]["ram"] >= 400 * 2**20
    monkeypatch.setenv("HOLD_MIB", "10")
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json").assert_outcomes(passed=1)
