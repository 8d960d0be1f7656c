"""constraints/cpu.txt is a full lock: every requirement of the project and its extras is pinned there, and a venv
made by the README's first command holds exactly the locked versions (constraints/README.md)."""

import importlib.metadata
import re

import tomllib
from doc_figures import ROOT


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)).lower()


def locked() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints/cpu.txt").read_text().splitlines():
        if "==" in line and not line.lstrip().startswith("#"):
            name, version = line.split("==")
            pins[_name(name)] = version.strip()
    return pins


def test_every_requirement_of_the_project_and_its_extras_is_pinned():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(r) for r in project["dependencies"]}
    wanted |= {_name(r) for extra in project["optional-dependencies"].values() for r in extra}
    pins = locked()
    assert wanted - set(pins) == set(), sorted(wanted - set(pins))
    assert pins["torch"] == "2.13.0+cpu"  # the CPU wheel: a looser pin pulls gigabytes of CUDA packages


def test_the_locked_packages_installed_here_are_the_locked_versions():
    """A venv made by the README's first command installs from the lock: a drift here is an install that did not."""
    drift = {}
    for name, version in locked().items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # an extra this venv was not made with (bench, gpu)
        if installed != version:
            drift[name] = (version, installed)
    assert drift == {}, drift
