"""A uv project, as a new user makes one (README, "In a uv project"): the built wheel added with `uv add --dev`, then
`uv run pytest --gpu-budget` gates a command case and a function case, recorded then judged.

The project does not depend on torch (no CPU index, no CUDA wheels, nothing large to download): the plugin needs
none, and the project's ini empties gpu_budget_preload so the forkserver imports nothing of the case studies'. The
wheel is built by uv (the sdist, then the wheel from it, outside this checkout); the plugin's own requirements are
resolved at the lock's pins. It skips where uv is missing or the package index cannot be reached.
"""

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
# uv's words when the index is out of reach (refused connection, name resolution): not this project's fault
OFFLINE = ("error sending request", "dns error", "tcp connect error", "Network is unreachable")

_spec = importlib.util.spec_from_file_location("release_check", ROOT / ".ci" / "release_check.py")
release_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(release_check)  # its clean environment and its marked script: one user's run, as the release's

PROJECT = '''\
[project]
name = "a-fine-tune"
version = "0.1.0"
requires-python = ">=3.10"
dependencies = []

[tool.pytest.ini_options]
gpu_budget_preload = []
'''

RUNNER = '''\
def run(ctx):
    with ctx.meter.phase("load"):
        held = [bytearray(1 << 20) for _ in range(4)]
    for step in (1, 2, 3):
        with ctx.meter.phase(f"train_step_{step}", step=step):
            held.append(bytearray(1 << 20))
    return {"held_mib": len(held)}
'''

TEST = '''\
import sys
from pathlib import Path

import pytest
from gpu_budget import Scenario

COMMAND = Scenario(name="command", command=[sys.executable, str(Path(__file__).parent / "train.py")])
FUNCTION = Scenario(name="function", run="runner:run")


@pytest.mark.gpu_budget(ram="1 GiB")
def test_command(gpu_budget):
    row = gpu_budget.measure(COMMAND)
    assert [s.step for s in row.steps] == [1, 2, 3]


@pytest.mark.gpu_budget(ram="1 GiB")
def test_function(gpu_budget):
    row = gpu_budget.measure(FUNCTION)
    assert [s.step for s in row.steps] == [1, 2, 3] and row.info["held_mib"] == 7
'''


def _uv() -> str:
    """uv from the dev extra (beside this Python) first, then on PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "uv"
    found = str(beside) if beside.exists() else shutil.which("uv")
    if not found:
        pytest.skip("uv is not installed: pip install -c constraints/cpu.txt -e '.[dev]' (or uv on PATH)")
    return found


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, env=release_check.clean_env(UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1",
                                                                      **env),
                          check=False, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    if done.returncode != 0 and any(words in out for words in OFFLINE):
        pytest.skip("the package index cannot be reached: " + out.strip().splitlines()[-1])
    assert done.returncode == 0, f"{' '.join(args)}\n{out[-6000:]}"
    return done


def test_a_uv_project_adds_the_built_wheel_and_gates_a_command_and_a_function(tmp_path):
    uv, started = _uv(), time.monotonic()
    _run([uv, "build", "--python", sys.executable, "--out-dir", str(tmp_path / "dist"), str(ROOT)], cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob(f"pytest_gpu_budget-{VERSION}-*.whl")
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(PROJECT)
    (project / "train.py").write_text(release_check.SCRIPT)
    (project / "runner.py").write_text(RUNNER)
    (project / "test_budget.py").write_text(TEST)

    _run([uv, "add", "--dev", "--python", sys.executable, "-c", str(release_check.CONSTRAINTS), str(wheel)], cwd=project)
    declared = tomllib.loads((project / "pyproject.toml").read_text())
    assert declared["dependency-groups"]["dev"] == ["pytest-gpu-budget"]
    assert declared["tool"]["uv"]["sources"]["pytest-gpu-budget"] == {"path": str(wheel)}
    assert not list(project.glob(".venv/lib/python*/site-packages/torch")), "torch was installed in the uv project"

    for verdict, env in (("no-baseline", {}), ("pass", {"CI": "true"})):  # recorded, then judged against it
        done = _run([uv, "run", "--offline", "pytest", "--gpu-budget", "-p", "no:cacheprovider",
                     "--gpu-budget-json=r.json"], cwd=project, **env)
        assert re.search(r"^=+ 2 passed in ", done.stdout, re.MULTILINE), done.stdout[-4000:]
        report = json.loads((project / "r.json").read_text())
        assert report["hardware"]["torch"] is None and report["hardware"]["preload"] == ""
        assert {row["scenario"]: row["verdict"] for row in report["results"]} == {"command": verdict, "function": verdict}
    assert len(list(project.glob("baselines/*/test_budget.json"))) == 1
    print(f"uv project: built, added and gated twice in {time.monotonic() - started:.1f} s")


def test_the_readmes_uv_block_pins_torch_to_the_cpu_index_and_runs_the_gate():
    """The README's uv block: uv's own index settings, the CPU index explicit (nothing else is looked up there), torch
    sourced from it; the commands add the plugin as a dev dependency and end with the command the test above runs."""
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("**In a uv project**"):readme.index("## Gate your own fine-tune")]
    toml, bash = re.search(r"```toml\n(.*?)```", block, re.DOTALL).group(1), re.search(r"```bash\n(.*?)```", block,
                                                                                        re.DOTALL).group(1)
    declared = tomllib.loads(toml)
    assert declared["tool"]["uv"]["index"] == [{"name": "pytorch-cpu", "url": "https://download.pytorch.org/whl/cpu",
                                                "explicit": True}]
    assert declared["tool"]["uv"]["sources"] == {"torch": {"index": "pytorch-cpu"}}
    commands = [line.split("#")[0].strip() for line in bash.splitlines()]
    assert commands == ["uv add torch", "uv add --dev /path/to/pytest-gpu-budget", "uv run pytest --gpu-budget"]
