"""An installer's own processes end with it: a resolve or install cut off (its timeout, a Ctrl-C) kills the build it
started too, not only the tool, so no source build runs on beside the cases measured next. Made for real, from a
source distribution in a folder of its own whose in-tree build backend sleeps (no index asked)."""

import os
import tarfile
import time

import pytest
from local_wheels import offline

from gpu_budget.isolate import environment
from gpu_budget.isolate.environment import EnvironmentFailed, make

BACKEND = '''
import os, time
def get_requires_for_build_wheel(config_settings=None):
    return []
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with open({pids!r}, "a") as fh:
        fh.write(f"{{os.getpid()}}\\n")
    time.sleep(120)
    raise RuntimeError("never built")
'''
PYPROJECT = ('[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n\n'
             '[project]\nname = "gbslow"\nversion = "1.0"\n')


def write_sdist(links, pids) -> None:
    tree = links.parent / "gbslow-1.0"
    tree.mkdir()
    (tree / "pyproject.toml").write_text(PYPROJECT)
    (tree / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: gbslow\nVersion: 1.0\n")
    (tree / "backend.py").write_text(BACKEND.format(pids=str(pids)))
    with tarfile.open(links / "gbslow-1.0.tar.gz", "w:gz") as tar:
        tar.add(tree, arcname="gbslow-1.0")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_tool_cut_off_by_its_timeout_takes_its_build_with_it(tmp_path, monkeypatch):
    links = offline(monkeypatch, tmp_path / "links")
    pids = tmp_path / "builds.txt"
    write_sdist(links, pids)
    monkeypatch.setattr(environment, "TOOL_TIMEOUT", 10)  # time for the build to start on a loaded host
    with pytest.raises(EnvironmentFailed) as raised:
        make(["gbslow==1.0"], tmp_path / "envs")
    assert "timed out after 10 s" in str(raised.value), str(raised.value)
    assert pids.exists(), f"the build never started: {raised.value}"
    started = [int(line) for line in pids.read_text().split()]
    deadline = time.monotonic() + 3
    while any(alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in started if alive(p)]
    for pid in left:  # not to leave it behind this test either
        os.kill(pid, 9)
    assert not left, f"the build the tool started runs on: {left}"


MAKER = '''
import sys
from pathlib import Path
from gpu_budget.isolate.environment import make

make(["gbslow==1.0"], Path(sys.argv[1]))
'''


def test_a_tool_whose_session_is_killed_mid_build_ends_with_its_build(tmp_path, monkeypatch):
    """The process making the environment SIGKILLed (the OOM killer, a CI job's hard stop, pytest-timeout's thread
    method ending pytest) runs no cleanup: the installer and its build ran on for their whole length, for nobody."""
    import signal
    import subprocess
    import sys

    from gpu_budget.measure.procfs import read_family, read_stat

    def running(pid: int) -> bool:  # a zombie has ended: init reaps it
        family = read_family(pid)
        return family is not None and not family.zombie

    links = offline(monkeypatch, tmp_path / "links")
    pids = tmp_path / "builds.txt"
    write_sdist(links, pids)
    maker = subprocess.Popen([sys.executable, "-c", MAKER, str(tmp_path / "envs")])
    try:
        deadline = time.monotonic() + 90
        while not (pids.exists() and pids.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pids.exists(), "the build never started"
        build = int(pids.read_text().split()[0])
        tool = read_stat(build).ppid  # the installer that runs the build
        maker.send_signal(signal.SIGKILL)
        maker.wait()
        deadline = time.monotonic() + 15
        while any(running(p) for p in (build, tool)) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [p for p in (build, tool) if running(p)]
    finally:
        if maker.poll() is None:
            maker.kill()
    for pid in left:  # not to leave them behind this test either
        os.kill(pid, signal.SIGKILL)
    assert not left, f"outlived the killed process that made the environment: {left}"
