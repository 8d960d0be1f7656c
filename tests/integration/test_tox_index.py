"""tox.ini installs torch as the README's first command does: the +cpu pin from PyTorch's CPU index, in a step of its
own, and the lock pinning the project's extras too, so no env pulls torch's CUDA build from PyPI."""

import configparser
import re
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
CPU_INDEX = "--extra-index-url https://download.pytorch.org/whl/cpu"
LOCK = "-c constraints/cpu.txt"


def _requirement_name(line: str) -> str:
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]*", line).group(0)).lower()


def _envs() -> dict[str, configparser.SectionProxy]:
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini")
    return {name: tox[name] for name in tox.sections() if name.startswith("testenv")}


def _pulls_torch(env: configparser.SectionProxy) -> bool:
    """torch among its deps, or among the requirements of an extra it installs."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    wanted = [line.strip() for line in env.get("deps", "").splitlines()]
    wanted += [req for name in env.get("extras", "").replace(",", " ").split() for req in extras.get(name, [])]
    return "torch" in {_requirement_name(req) for req in wanted if req and not req.startswith("-")}


def test_every_env_that_installs_torch_takes_it_from_pytorchs_cpu_index():
    """An env that makes its own site packages and pulls torch installs it alone first, from the CPU index at the lock's
    pin, and constrains the extras' install by the lock (tox leaves it unpinned otherwise: torch>=2.4 from PyPI is the
    CUDA build with its CUDA packages). An env on the host's site packages (gpu) keeps the host's CUDA torch."""
    checked = []
    for name, env in _envs().items():
        if env.getboolean("sitepackages", fallback=False) or env.getboolean("skip_install", fallback=False):
            continue
        if not _pulls_torch(env):
            continue
        deps = [line.strip() for line in env.get("deps", "").splitlines() if line.strip()]
        assert CPU_INDEX in deps and LOCK in deps, (name, deps)
        assert "torch" in {_requirement_name(d) for d in deps if not d.startswith("-")}, (name, deps)
        assert env.getboolean("constrain_package_deps", fallback=False), f"{name}: the extras' install is not pinned"
        checked.append(name)
    assert checked == ["testenv:cpu"], checked


def test_tox_reads_the_cpu_env_as_written():
    """tox's own reading of the env (not configparser's): the index and the lock in deps, the extras pinned, a tox
    that knows constrain_package_deps."""
    done = subprocess.run([sys.executable, "-m", "tox", "config", "-e", "cpu", "--core", "-k", "deps", "constrain_package_deps",
                           "requires"], cwd=ROOT, check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line.strip() for line in done.stdout.splitlines()]
    assert CPU_INDEX in lines and LOCK in lines and "torch" in lines, done.stdout
    assert "constrain_package_deps = True" in lines and "tox>=4.4" in lines, done.stdout
