"""The remediation search with a fix whose run crashes: no larger set holding it is run, and the report says so."""

import json

RUNNER = '''
import json

def crashy(ctx):
    """Holds `mib` MiB, less with the fixes; raises with e2e_boom; logs the fixes of every real run to `log`."""
    with open(ctx.params["log"], "a") as fh:
        fh.write(json.dumps(list(ctx.fixes)) + "\\n")
    if ctx.has("e2e_boom"):
        raise RuntimeError("e2e_boom broke the run")
    mib = ctx.params["mib"] // (2 if ctx.has("e2e_halve") else 1) - (40 if ctx.has("e2e_trim") else 0)
    with ctx.meter.phase("load"):
        held = b"\\x01" * (mib << 20)
    for step in (1, 2):
        with ctx.meter.phase(f"train_step_{step}", step=step):
            pass
    return {"held": len(held)}
'''

TESTS = '''
from gpu_budget import Fix
from gpu_budget.declare import fixes

FIXES = [fixes.register(f) for f in (
    Fix("e2e_boom", "runtime", "makes the run raise"),
    Fix("e2e_trim", "runtime", "holds 40 MiB less", cost="slower"),
    Fix("e2e_halve", "model", "holds half", cost="accuracy-risk"),
)]
S = Scenario(name="crashy", run="runners_crash:crashy", params={"mib": 300}, supports=FIXES)

@pytest.mark.gpu_budget(ram="140 MiB")
def test_saveable(gpu_budget):
    gpu_budget.measure(S.with_params(log="saveable.log"))

@pytest.mark.gpu_budget(ram="60 MiB")
def test_unsaveable(gpu_budget):
    gpu_budget.measure(S.with_params(log="unsaveable.log"))
'''


def logged(pytester, name):
    return [json.loads(line) for line in (pytester.path / name).read_text().splitlines()]


def test_no_set_holding_a_fix_whose_run_crashed_is_run(project):
    """e2e_boom's set raises: before, every larger set holding it ran and raised again (7 real runs for the
    unsaveable case, 6 for the saveable one); each such run costs minutes at real scale and tells nothing."""
    pytester = project(TESTS)
    pytester.makepyfile(runners_crash=RUNNER)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-remediate",
                                           "--gpu-budget-json=report.json")
    result.assert_outcomes(failed=2)
    rows = {r["nodeid"].split("::")[-1]: r["remediation"]
            for r in json.loads((pytester.path / "report.json").read_text())["results"]}

    none = rows["test_unsaveable"]
    assert logged(pytester, "unsaveable.log") == [[], ["e2e_boom"], ["e2e_trim"], ["e2e_halve"],
                                                  ["e2e_trim", "e2e_halve"]]  # the case, then 4 real runs
    assert none["status"] == "none-passes" and none["runs"] == 4 and none["pruned"] == {"e2e_boom": 3}
    assert none["tried"][0]["crashed"] and not any(t.get("crashed") for t in none["tried"][1:])

    found = rows["test_saveable"]
    assert logged(pytester, "saveable.log") == [[], ["e2e_boom"], ["e2e_trim"], ["e2e_halve"],
                                                ["e2e_trim", "e2e_halve"]]
    assert found["found"] == ["e2e_trim", "e2e_halve"] and found["pruned"] == {"e2e_boom": 2}
    result.stdout.fnmatch_lines([
        "*remediation (--gpu-budget-remediate)*",
        ("*test_saveable*remediation: passes with +e2e_trim +e2e_halve (RAM *), found in 4 real runs (bound 8); "
         "1 set tried before it failed with an error (not measured) and 2 sets holding e2e_boom, whose run crashed, "
         "were not run, so it may not be the cheapest"),
        "*tried e2e_boom: * error (measured child failed (exception): *e2e_boom broke the run*",
        "*not tried: 2 sets holding e2e_boom (its run crashed)",
        ("*test_unsaveable*remediation: none of the 4 sets run of e2e_boom, e2e_trim, e2e_halve passed: 3 measured "
         "over budget, 1 failed with an error (not measured); 3 sets holding e2e_boom, whose run crashed, were not run; "
         "the lowest: +e2e_trim +e2e_halve (RAM *)"),
    ])
