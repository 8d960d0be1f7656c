"""An install that fails because a file system is full (or read-only) says nothing of the requirements: it is not
remembered (isolate/env_failures.py), and once there is room the next session makes the environment. Made for real
on a tmpfs too small for the wheel, in a mount namespace of its own (`unshare`), then grown."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from local_wheels import offline, write_wheel

PLUGIN = str(Path(__file__).resolve().parents[2] / "plugin")
SESSIONS = """
import json, subprocess, sys
from gpu_budget.isolate.environment import EnvironmentFailed, find_tool, make
root, tool = sys.argv[1], find_tool(sys.argv[2])
try:
    make(["gbtiny==1.0"], root, tool)
except EnvironmentFailed as exc:
    print(json.dumps({"kind": exc.kind, "passing": exc.passing, "message": str(exc)}))
subprocess.run(["mount", "-o", "remount,size=16m", root], check=True)  # room made, for the next session
print(json.dumps({"overlay": make(["gbtiny==1.0"], root, tool).overlay}))
"""


def test_an_install_into_a_full_file_system_is_not_remembered(tmp_path, monkeypatch, tool):
    namespace = shutil.which("unshare") and subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    if not namespace or namespace.returncode:
        pytest.skip("no mount namespace here (unshare -rm): a full file system cannot be made")
    wheel = write_wheel(offline(monkeypatch, tmp_path / "links"), "1.0")
    with zipfile.ZipFile(wheel, "a") as zf:
        zf.writestr("gbtiny/weights.bin", os.urandom(2 << 20))  # more than the tmpfs holds
    (tmp_path / "envs").mkdir()
    monkeypatch.setenv("PYTHONPATH", PLUGIN)
    envs = str(tmp_path / "envs")
    done = subprocess.run(["unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o size=600k tmpfs "$1" && shift && exec "$@"',
                           "sh", envs, sys.executable, "-c", SESSIONS, envs, tool.name],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    failed, made = (json.loads(line) for line in done.stdout.splitlines())
    assert (failed["kind"], failed["passing"]) == ("install", True), failed
    assert "No space left on device" in failed["message"] and "not remembered" in failed["message"], failed
    assert made == {"overlay": {"gbtiny": "1.0"}}  # the next session tried again, and made it
