"""Two gated sessions at once on one machine, sharing the kept assets folder (GPU_BUDGET_ASSETS)."""

import os
import subprocess
import sys
import time

RUNNERS = '''
import os, time


def prepare(ctx):
    with open(os.path.join(os.environ["PREPARES"]), "a") as fh:
        fh.write(f"{os.getpid()}\\n")
    time.sleep(2)  # a checkpoint being saved: the other session asks for the same assets meanwhile
    with open(os.path.join(ctx.assets, "model.bin"), "wb") as fh:
        fh.write(b"x" * 1000)


def run(ctx):
    with open(os.path.join(ctx.assets, "model.bin"), "rb") as fh:
        assert len(fh.read()) == 1000
    with ctx.meter.phase("train_step_1", step=1):
        pass
'''

TESTS = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="8 GiB")
def test_one(gpu_budget):
    gpu_budget.measure(Scenario(name="one", run="runners:run", prepare="runners:prepare"))
'''


def test_two_sessions_asking_for_the_same_assets_at_once_build_them_once(pytester, monkeypatch, tmp_path):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_mem=TESTS)
    prepares = tmp_path / "prepares"
    env = {**os.environ, "GPU_BUDGET_ASSETS": str(tmp_path / "assets"), "PREPARES": str(prepares)}
    argv = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:xdist", "-p", "no:cacheprovider",
            "--gpu-budget"]
    sessions = [subprocess.Popen([*argv, f"--gpu-budget-json=r{i}.json"], cwd=pytester.path, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in (1, 2)]
    outputs = [session.communicate(timeout=120)[0] for session in sessions]
    assert [session.returncode for session in sessions] == [0, 0], outputs
    assert len(prepares.read_text().split()) == 1, "both sessions built the same assets"
    left = [p.name for p in (tmp_path / "assets").iterdir()]
    assert not [name for name in left if ".tmp-" in name], f"a build folder was left: {left}"


HELD_BUILD = '''
import os, time


def prepare(ctx):
    with open(os.environ["PREPARES"], "a") as fh:
        fh.write(f"{os.getpid()}\\n")
    deadline = time.monotonic() + 60
    while not os.path.exists(os.environ["RELEASE"]) and time.monotonic() < deadline:  # until the other one waits
        time.sleep(0.05)


def run(ctx):
    with ctx.meter.phase("train_step_1", step=1):
        pass
'''


def test_a_session_waiting_on_anothers_build_says_so_once(pytester, monkeypatch, tmp_path):
    """It waited silently while the other built the assets (a real-scale checkpoint's minutes): a hang to its user."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=HELD_BUILD, test_mem=TESTS)
    prepares, release = tmp_path / "prepares", tmp_path / "release"
    env = {**os.environ, "GPU_BUDGET_ASSETS": str(tmp_path / "assets"), "PREPARES": str(prepares),
           "RELEASE": str(release)}
    argv = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:xdist", "-p", "no:cacheprovider",
            "--gpu-budget"]
    first = subprocess.Popen(argv, cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    second = None
    try:
        deadline = time.monotonic() + 60
        while not prepares.exists() and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.05)
        assert prepares.exists(), "the first session never started its build"
        second = subprocess.Popen(argv, cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True)
        shown = []
        for line in second.stdout:  # read as it comes: the line is said while the first still builds
            shown.append(line.rstrip("\n"))
            if "waiting for" in line:
                break
    finally:
        release.touch()
        said = first.communicate(timeout=120)[0]
        rest = second.communicate(timeout=120)[0] if second is not None else ""
    shown += rest.splitlines()
    assert (first.returncode, second.returncode) == (0, 0), (said, "\n".join(shown))
    (folder,) = (p for p in (tmp_path / "assets").iterdir() if p.is_dir())  # its marker beside it
    expected = f"gpu-budget: 'one': waiting for another process (pid {first.pid}) to finish building its assets in {folder}"
    assert [line for line in shown if "waiting for" in line] == [expected], shown
    assert "waiting for" not in said
    assert len(prepares.read_text().split()) == 1, "both sessions built the assets"
