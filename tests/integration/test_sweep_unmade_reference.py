"""A case whose own environment cannot be made is still swept: its row is the error it is (never measured in the
running environment instead), and each other listed version is measured and reported beside it, not dropped
without a word. The installers read a folder of hand-written wheels alone (tests/local_wheels.py)."""

import json

from local_wheels import offline, write_wheel

RUNNERS = '''
def small(ctx):
    import gbtiny
    with ctx.meter.phase("load"):
        held = b"\\x01" * (4 << 20)
    return {"gbtiny": gbtiny.__version__}
'''

TESTS = '''
import pytest
from gpu_budget import Environment, Scenario

@pytest.mark.gpu_budget(ram="4 GiB")
def test_pinned(gpu_budget):
    gpu_budget.measure(Scenario(name="pinned", run="runners:small",
                                environment=Environment(requirements=["gbtiny==3.0"])))
'''


def test_a_case_whose_environment_cannot_be_made_is_swept_at_the_other_versions(pytester, monkeypatch, tmp_path):
    monkeypatch.delenv("CI", raising=False)
    links = offline(monkeypatch, tmp_path / "links")
    write_wheel(links, "1.0")
    write_wheel(links, "2.0")  # no 3.0: the case's own environment cannot be made
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_pinned=TESTS)
    report = tmp_path / "report.json"
    result = pytester.runpytest_subprocess("--gpu-budget", "-p", "no:randomly", "--gpu-budget-json", str(report),
                                           "--gpu-budget-envs", str(tmp_path / "envs"),
                                           "--gpu-budget-sweep", "gbtiny==1.0,2.0")
    result.assert_outcomes(failed=1)  # the case's own verdict: its environment cannot be made
    row = json.loads(report.read_text())["results"][0]
    assert row["verdict"] == "error" and "its environment cannot be made" in row["message"]
    points = {p["version"]: p for p in row["sweep"]}
    assert sorted(points) == ["1.0", "2.0", "3.0"], points
    assert points["3.0"]["reference"] and points["3.0"]["status"] == "error"
    assert "cannot resolve gbtiny==3.0" in points["3.0"]["message"]
    assert [points[v]["status"] for v in ("1.0", "2.0")] == ["ok", "ok"]
    assert points["1.0"]["environment"]["overlay"] == {"gbtiny": "1.0"} and points["1.0"]["change"] == {}
    out = result.stdout.str()
    assert "sweep of gbtiny:" in out and "3.0 (ran at)" in out
