"""A swept command case runs its versions only where its program is the sweep environment's: across a real pytest
session, a sweep of gbtiny (a hand-written wheel in a local folder: no registry is asked) over command cases whose
first argument is not sys.executable. The running environment's interpreter named by another path becomes the
environment's one, as sys.executable does; a launcher script of the running environment, or another interpreter,
would run the running packages at every version, so the case is refused, naming its program."""

import json
import os
import sys
from pathlib import Path

import pytest
from inner_session import leave_outer_run
from local_wheels import offline, write_wheel

SCRIPT = '''
import json, os, sys
try:
    import gbtiny
    version = gbtiny.__version__
except ImportError:
    version = None
held = b"\\x01" * (4 << 20)
with open(os.environ["SEEN"], "a") as fh:
    fh.write(json.dumps({"case": os.environ["CASE"], "gbtiny": version}) + "\\n")
'''

LAUNCHER = '''#!{python}
import runpy, sys
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
'''

TESTS = '''
import os
import pytest
from gpu_budget import Environment, Scenario

def case(name, program):
    return Scenario(name=name, command=[program, "script.py"], env={{"CASE": name}})

@pytest.mark.gpu_budget(ram="4 GiB")
def test_running_python3(gpu_budget):
    gpu_budget.measure(case("running_python3", {running_python3!r}))

@pytest.mark.gpu_budget(ram="4 GiB")
def test_bare_python3(gpu_budget):
    gpu_budget.measure(case("bare_python3", "python3"))

@pytest.mark.gpu_budget(ram="4 GiB")
def test_launcher(gpu_budget):
    gpu_budget.measure(case("launcher", "trainer"))

@pytest.mark.gpu_budget(ram="4 GiB")
def test_other_python(gpu_budget):
    gpu_budget.measure(case("other_python", {other_python!r}))

@pytest.mark.gpu_budget(ram="4 GiB")
def test_own_environment_launcher(gpu_budget):
    own = Environment(requirements=["gbtiny==1.0"])  # a case's own environment: the same program, the same refusal
    gpu_budget.measure(Scenario(name="own", command=["trainer", "script.py"], env={{"CASE": "own"}}, environment=own))
'''

# the running interpreter under another name in its bin folder (a venv has python, python3 and python3.X)
RUNNING_PYTHON3 = next((Path(sys.executable).parent / name for name in ("python3", "python", f"python3.{sys.version_info.minor}")
                        if name != Path(sys.executable).name and (Path(sys.executable).parent / name).exists()), None)


@pytest.mark.skipif(RUNNING_PYTHON3 is None or os.path.realpath(sys.executable) == sys.executable,
                    reason="needs a venv interpreter whose bin folder holds it under another name")
def test_a_swept_command_runs_the_environments_program_or_is_refused(pytester, monkeypatch, tmp_path):
    leave_outer_run(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    write_wheel(offline(monkeypatch, tmp_path / "links"), "1.0")
    seen, tools = tmp_path / "seen.jsonl", tmp_path / "tools"
    tools.mkdir()
    launcher = tools / "trainer"  # a console script of the running environment, as accelerate's or torchrun's is
    launcher.write_text(LAUNCHER.format(python=sys.executable))
    launcher.chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([str(tools), os.environ["PATH"]]))
    monkeypatch.setenv("SEEN", str(seen))
    other = os.path.realpath(sys.executable)  # the base interpreter: no venv, so none of the sweep's packages
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(script=SCRIPT, test_program=TESTS.format(running_python3=str(RUNNING_PYTHON3),
                                                                 other_python=other))
    result = pytester.runpytest_subprocess("--gpu-budget", "-p", "no:randomly", "-p", "no:xdist",
                                           "--gpu-budget-json=r.json", f"--gpu-budget-envs={tmp_path / 'envs'}",
                                           "--gpu-budget-sweep", "gbtiny==1.0")
    out = result.stdout.str()
    ran = {(s["case"], s["gbtiny"]) for s in map(json.loads, seen.read_text().splitlines())}
    # the running interpreter, named by its bin folder's python3 or found on PATH, became the environment's
    assert {("running_python3", None), ("running_python3", "1.0"), ("bare_python3", None),
            ("bare_python3", "1.0")} <= ran, out
    # a launcher and another interpreter are refused, naming the program: nothing measured at 1.0 in their name
    assert not {("launcher", "1.0"), ("launcher", None), ("other_python", "1.0")} & (ran - {("launcher", None)})
    assert ("launcher", None) in ran and ("other_python", None) in ran  # their gated runs (the running release)
    assert sum(1 for case, _ in ran if case == "launcher") == 1, ran  # not once more at 1.0 under the running one
    assert f"command 'trainer' runs {sys.executable}" in out, out
    assert f"command {other!r} is the interpreter {other}" in out, out
    assert not any(case == "own" for case, _ in ran)  # refused before it ran, never in the running environment
    result.assert_outcomes(passed=2, failed=3)
    rows = {r["scenario"]: r for r in json.loads((pytester.path / "r.json").read_text())["results"]}
    assert [p["version"] for p in rows["running_python3"]["sweep"]] == ["(not installed)", "1.0"]
    assert rows["launcher"]["verdict"] == "error" and "gbtiny==1.0 would not take effect" in rows["launcher"]["message"]
    assert rows["own"]["verdict"] == "error" and rows["own"]["message"].startswith(
        "its environment cannot run this command: command 'trainer' runs ")
