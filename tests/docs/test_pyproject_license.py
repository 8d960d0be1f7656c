"""pyproject.toml's [project] table as setuptools reads it at build time: no deprecation warning (the license table's
support ends 2027-02-18), and the license given as an SPDX expression, which the wheel's metadata carries."""

import warnings
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_setuptools_reads_the_project_table_without_a_deprecation_warning():
    pytest.importorskip("setuptools")
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution
    from setuptools.warnings import SetuptoolsDeprecationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", SetuptoolsDeprecationWarning)
        dist = apply_configuration(Distribution(), PYPROJECT)
    assert dist.metadata.license_expression == "MIT"


def test_the_build_requires_a_setuptools_that_reads_an_spdx_license():
    """SPDX strings in project.license came with setuptools 77; an older one rejects them."""
    requires = [Requirement(r) for r in tomllib.loads(PYPROJECT.read_text())["build-system"]["requires"]]
    allowed = next(r.specifier for r in requires if r.name == "setuptools")
    assert "77.0.3" in allowed and "76.1" not in allowed
