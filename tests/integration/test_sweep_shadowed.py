"""A swept package that a folder ahead of every site folder holds (the project's own checkout beside its tests, a
PYTHONPATH folder of modules) is imported from there at every version: each column would measure that copy under
another version's name. Such versions are named as not measured, why and where, never reported as measured. The
installers read a folder of hand-written wheels alone (tests/local_wheels.py)."""

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
from gpu_budget import Scenario

@pytest.mark.gpu_budget(ram="4 GiB")
def test_small(gpu_budget):
    gpu_budget.measure(Scenario(name="small", run="runners:small"))
'''


def test_versions_a_local_copy_shadows_are_not_reported_as_measured(pytester, monkeypatch, tmp_path):
    monkeypatch.delenv("CI", raising=False)
    links = offline(monkeypatch, tmp_path / "links")
    write_wheel(links, "1.0")
    write_wheel(links, "2.0")
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_small=TESTS)
    pytester.mkpydir("gbtiny").joinpath("__init__.py").write_text("__version__ = 'the checkout'\n")
    report = tmp_path / "report.json"
    result = pytester.runpytest_subprocess("--gpu-budget", "-p", "no:randomly", "--gpu-budget-json", str(report),
                                           "--gpu-budget-envs", str(tmp_path / "envs"),
                                           "--gpu-budget-sweep", "gbtiny==1.0,2.0")
    result.assert_outcomes(passed=1)  # the case's own verdict: what it runs, the checkout, as usual
    row = json.loads(report.read_text())["results"][0]
    points = {p["version"]: p for p in row["sweep"] if not p["reference"]}
    assert sorted(points) == ["1.0", "2.0"]
    for version, point in points.items():
        assert point["status"] == "error" and point["peaks"] is None, point
        assert f"gbtiny=={version}: not measured: gbtiny is imported from {pytester.path / 'gbtiny'}" in point["message"]
    assert "gbtiny 1.0 error" in result.stdout.str()
