"""Environments and sweeps end to end: a function case and a command case swept across two transformers releases
(5.17.0, made over the running environment, and the running one) in a real pytest session under xdist, beside a
case whose own environment cannot resolve."""

import importlib.util
import json
from importlib import metadata

import pytest

RUNNING = metadata.version("transformers") if importlib.util.find_spec("transformers") else None
OLD = "5.17.0"

RUNNERS = '''
import json, os

def versions(ctx):
    with ctx.meter.phase("load"):
        import transformers
        held = b"\\x01" * (8 << 20)
    with open(os.environ["SEEN"], "a") as fh:
        fh.write(json.dumps({"case": "function", "transformers": transformers.__version__}) + "\\n")
    return {"transformers": transformers.__version__}
'''

SCRIPT = '''
import json, os, sys
from gpu_budget import phase

phase("load")
import transformers
held = b"\\x01" * (8 << 20)
with open(os.environ["SEEN"], "a") as fh:
    fh.write(json.dumps({"case": "command", "transformers": transformers.__version__, "python": sys.executable}) + "\\n")
'''

TESTS = '''
import sys
import pytest
from gpu_budget import Environment, Scenario

@pytest.mark.gpu_budget(ram="4 GiB")
def test_function(gpu_budget):
    gpu_budget.measure(Scenario(name="function", run="runners:versions"))

@pytest.mark.gpu_budget(ram="4 GiB")
def test_command(gpu_budget):
    gpu_budget.measure(Scenario(name="command", command=[sys.executable, "script.py"]))

@pytest.mark.gpu_budget(ram="4 GiB")
def test_bad_environment(gpu_budget):
    gpu_budget.measure(Scenario(name="bad", run="runners:versions",
                                environment=Environment(requirements=["transformers==0.0.404"])))
'''


@pytest.mark.skipif(RUNNING is None or RUNNING == OLD, reason="needs the scenarios extra's transformers, not 5.17.0")
def test_a_sweep_measures_each_release_side_by_side_and_names_the_one_that_fails(pytester, monkeypatch, tmp_path):
    monkeypatch.delenv("CI", raising=False)
    seen = tmp_path / "seen.jsonl"
    monkeypatch.setenv("SEEN", str(seen))
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, script=SCRIPT, test_envs=TESTS)
    report = tmp_path / "report.json"
    result = pytester.runpytest_subprocess(
        "--gpu-budget", "-n", "2", "-p", "no:randomly", "--gpu-budget-json", str(report),
        "--gpu-budget-envs", str(tmp_path / "envs"), "--gpu-budget-sweep", f"transformers=={OLD},{RUNNING},99.0.0")
    out = result.stdout.str()
    result.assert_outcomes(passed=2, failed=1)
    # the bad environment is an error naming the requirement, and nothing was measured in its place
    assert "cannot resolve transformers==0.0.404" in out
    data = json.loads(report.read_text())
    rows = {row["scenario"]: row for row in data["results"]}
    assert rows["bad"]["verdict"] == "error" and "wall_seconds" not in rows["bad"]
    # ... and it is swept all the same: its own version (the one it pins) the error, the others measured beside it
    bad = {p["version"]: p for p in rows["bad"]["sweep"]}
    assert bad["0.0.404"]["reference"] and bad["0.0.404"]["status"] == "error"
    assert "cannot resolve transformers==0.0.404" in bad["0.0.404"]["message"]
    assert bad[OLD]["status"] == "ok" and bad[OLD]["environment"]["overlay"]["transformers"] == OLD
    # each case ran at both releases: the children said which transformers they imported
    ran = {(s["case"], s["transformers"]) for s in map(json.loads, seen.read_text().splitlines())}
    assert ran == {("function", OLD), ("function", RUNNING), ("command", OLD), ("command", RUNNING)}
    for name in ("function", "command"):
        points = {p["version"]: p for p in rows[name]["sweep"]}
        assert points[RUNNING]["reference"] and points[RUNNING]["peaks"] == rows[name]["peaks"]  # the gated run
        assert points[OLD]["status"] == "ok" and not points[OLD]["reference"]
        assert points[OLD]["environment"]["overlay"]["transformers"] == OLD
        assert points[OLD]["change"]["ram_tree"] is not None
        assert points["99.0.0"]["status"] == "error" and "transformers==99.0.0" in points["99.0.0"]["message"]
    # side by side in the terminal: a column per version, the failed one named
    header = next(line for line in out.splitlines() if line.startswith("test ") and "(ran at)" in line)
    assert header.split()[1:] == ["0.0.404", "(ran", "at)", OLD, RUNNING, "(ran", "at)", "99.0.0"]
    assert "transformers 99.0.0 error (3 case(s)" in out
    # the 5.17.0 environment was made once between the two workers, and its creation time reported
    made = [e for e in data["environments"] if e["requirements"] == [f"transformers=={OLD}"]]
    assert [e["cached"] for e in made].count(False) == 1 and all(e["seconds"] > 0 for e in made)
    assert f"environment transformers=={OLD} (installs " in out
