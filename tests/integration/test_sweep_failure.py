"""A sweep version whose environment cannot be made, across real pytest sessions: the first tries and fails, the
second reports the remembered failure at once (gbtiny 2.0 has been added to the local index by then, so a try would
have made it), and --gpu-budget-update tries again and makes it. The installers read a folder of hand-written
wheels alone (tests/local_wheels.py): no registry is asked."""

import json

from local_wheels import offline, unsatisfiable, write_wheel

from gpu_budget.isolate.environment import find_tool

RUNNERS = '''
def small(ctx):
    with ctx.meter.phase("load"):
        held = b"\\x01" * (4 << 20)
    return {}
'''

TESTS = '''
import pytest
from gpu_budget import Scenario

@pytest.mark.gpu_budget(ram="4 GiB")
def test_small(gpu_budget):
    gpu_budget.measure(Scenario(name="small", run="runners:small"))

@pytest.mark.gpu_budget(ram="4 GiB")
def test_other(gpu_budget):
    gpu_budget.measure(Scenario(name="other", run="runners:small"))
'''

WANTED = "gbtiny==2.0"


def test_a_failed_sweep_environment_is_remembered_and_tried_again_on_update(pytester, monkeypatch, tmp_path):
    monkeypatch.delenv("CI", raising=False)
    links = offline(monkeypatch, tmp_path / "links")
    write_wheel(links, "1.0")
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_small=TESTS)

    def session(name: str, *more: str) -> tuple[str, dict]:
        report = tmp_path / f"{name}.json"
        result = pytester.runpytest_subprocess(
            "--gpu-budget", "-n", "2", "-p", "no:randomly", "--gpu-budget-json", str(report), "--gpu-budget-envs",
            str(tmp_path / "envs"), "--gpu-budget-sweep", WANTED, *more)
        result.assert_outcomes(passed=2)  # a sweep's version is reported, never judged
        data = json.loads(report.read_text())
        return result.stdout.str(), data

    def swept(data: dict) -> dict:
        points = [p for row in data["results"] for p in row["sweep"] if p["version"] == "2.0"]
        assert len(points) == 2 and len({p["message"] for p in points}) == 1  # the two cases read alike
        return points[0]

    def listed(data: dict) -> dict:
        """The environment as the worker that tried it (or read it remembered) lists it."""
        found = [e for e in data["environments"] if e["requirements"] == [WANTED]]
        assert 1 <= len(found) <= 2  # each worker that asked lists it once; one that waited says so
        return min(found, key=lambda e: (e.get("waited", 0), -e["seconds"]))

    out, data = session("first")
    first = listed(data)
    reason = unsatisfiable(WANTED, find_tool().name)  # uv where the dev extra installed it, else pip
    assert first["error"] == reason and first["seconds"] > 0 and "remembered" not in first
    assert swept(data)["status"] == "error" and WANTED in swept(data)["message"]
    assert f"environment {WANTED} cannot be made: failed in " in out
    assert "gbtiny 2.0 error (2 case(s): " in out

    write_wheel(links, "2.0")  # from here a try would succeed: the second session must not try
    out, data = session("second")
    again = listed(data)
    # remembered, not tried: a try would now succeed (gbtiny 2.0 is in the links); no wall time is compared (a session
    # reading pip's configuration for uv spends its own second, whatever it does with the environment)
    assert (again["error"], again["remembered"]) == (reason, True)
    assert swept(data)["status"] == "error" and "--gpu-budget-update tries it again" in swept(data)["message"]
    assert f"environment {WANTED} cannot be made: failed as remembered from an earlier run, in " in out

    out, data = session("update", "--gpu-budget-update")
    found = [e for e in data["environments"] if e["requirements"] == [WANTED]]
    assert sorted(e["cached"] for e in found) in ([False], [False, True])  # made once; either worker may make it
    made = next(e for e in found if not e["cached"])
    assert made["overlay"] == {"gbtiny": "2.0"} and "error" not in made
    assert swept(data)["status"] == "ok"
    assert f"environment {WANTED} (installs gbtiny==2.0): made in " in out
