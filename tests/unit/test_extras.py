"""An extra's install line, from the installed distribution's metadata: it works for a clone's install too."""

from importlib import metadata
from pathlib import Path

import tomllib

from gpu_budget.session import extras

EXTRAS = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"][
    "optional-dependencies"]


def test_an_extras_requirements_are_pyprojects_own():
    for name in ("plots", "explore", "gpu"):
        assert extras.requirements(name) == tuple(EXTRAS[name]), name


def test_the_hint_installs_the_requirements_not_the_distribution_by_name():
    assert extras.install_hint("plots", "matplotlib") == f"pip install '{EXTRAS['plots'][0]}' (the plots extra of pytest-gpu-budget)"
    assert "pytest-gpu-budget[" not in extras.install_hint("explore", "hypothesis")


def test_without_the_distributions_metadata_the_module_is_named(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "requires", missing)
    assert extras.requirements("plots") == ()
    assert extras.install_hint("plots", "matplotlib") == "pip install matplotlib (the plots extra of pytest-gpu-budget)"


def test_an_extra_nobody_declared_falls_back_to_the_module():
    assert extras.install_hint("no-such-extra", "somemodule") == "pip install somemodule (the no-such-extra extra of pytest-gpu-budget)"
