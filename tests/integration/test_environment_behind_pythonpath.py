"""A case's own environment wins over installed packages on PYTHONPATH, as it wins over the running site-packages.

A GPU host without a package index carries the wheels its image lacks into a
folder put on PYTHONPATH (benchmarks/gpu_kit.sh); a user may do the same.
PYTHONPATH's folders come first on every interpreter's sys.path, so a release
there shadowed the release a case's environment installed: the case ran the
kit's version and was reported as the environment's. The gate hands a helper
such folders (any holding installed distributions) behind the environment's
own site-packages instead; the project's own folders stay first.
"""

import json
import os
import subprocess
import sys

from inner_session import leave_outer_run
from local_wheels import write_wheel

from gpu_budget.isolate.wheelhouse import VARIABLE

RUNNERS = '''
import json, os, gbtiny


def versions(ctx):
    with open(os.environ["SEEN"], "a") as fh:
        fh.write(json.dumps({"case": ctx.params["case"], "gbtiny": gbtiny.__version__}) + "\\n")
    return {}
'''

SCRIPT = '''
import json, os, gbtiny

with open(os.environ["SEEN"], "a") as fh:
    fh.write(json.dumps({"case": "command", "gbtiny": gbtiny.__version__}) + "\\n")
'''

TESTS = '''
import sys
import pytest
from gpu_budget import Environment, Scenario

OWN = Environment(requirements=["gbtiny==1.0"])


@pytest.mark.gpu_budget(ram="4 GiB")
def test_function(gpu_budget):
    gpu_budget.measure(Scenario(name="function", run="runners:versions", params={"case": "function"},
                                environment=OWN))


@pytest.mark.gpu_budget(ram="4 GiB")
def test_command(gpu_budget):
    gpu_budget.measure(Scenario(name="command", command=[sys.executable, "script.py"], environment=OWN))


@pytest.mark.gpu_budget(ram="4 GiB")
def test_running(gpu_budget):
    gpu_budget.measure(Scenario(name="running", run="runners:versions", params={"case": "running"}))
'''


def test_an_environments_release_wins_over_the_one_a_pythonpath_kit_carries(pytester, monkeypatch, tmp_path):
    leave_outer_run(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    kit, house, seen = tmp_path / "kit", tmp_path / "house", tmp_path / "seen.jsonl"
    carried = write_wheel(tmp_path / "carried", "2.0")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(kit),
                    str(carried)], check=True)  # a kit folder as gpu_kit.sh makes one
    write_wheel(house, "1.0")
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, script=SCRIPT, test_mem=TESTS)
    env = {**os.environ, VARIABLE: str(house), "SEEN": str(seen),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(pytester.path), str(kit), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-p",
                           "no:xdist", "--gpu-budget", f"--gpu-budget-envs={tmp_path / 'envs'}", "-q"],
                          cwd=pytester.path, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    found = {row["case"]: row["gbtiny"] for row in map(json.loads, seen.read_text().splitlines())}
    assert found == {"function": "1.0", "command": "1.0", "running": "2.0"}, found
