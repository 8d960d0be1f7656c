"""pyproject.toml's [project] table as setuptools reads it at build time: no deprecation warning (the license table's
support ends 2027-02-18), and the license given as an SPDX expression, which the wheel's metadata carries."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


CHECK = """
import sys, warnings
from setuptools.config.pyprojecttoml import apply_configuration
from setuptools.dist import Distribution
from setuptools.warnings import SetuptoolsDeprecationWarning

with warnings.catch_warnings():
    warnings.simplefilter("error", SetuptoolsDeprecationWarning)
    dist = apply_configuration(Distribution(), sys.argv[1])
print(dist.metadata.license_expression)
"""


def test_setuptools_reads_the_project_table_without_a_deprecation_warning():
    """In a fresh interpreter, as a build reads it: setuptools refuses to import into a process where another test
    imported the standard library's distutils first (_distutils_hack's assertion)."""
    if importlib.util.find_spec("setuptools") is None:  # found, not imported here
        pytest.skip("setuptools is not installed")
    read = subprocess.run([sys.executable, "-c", CHECK, str(PYPROJECT)], capture_output=True, text=True, check=False)
    assert read.returncode == 0, read.stderr[-3000:]
    assert read.stdout.strip() == "MIT"


def test_the_build_requires_a_setuptools_that_reads_an_spdx_license():
    """SPDX strings in project.license came with setuptools 77; an older one rejects them."""
    requires = [Requirement(r) for r in tomllib.loads(PYPROJECT.read_text())["build-system"]["requires"]]
    allowed = next(r.specifier for r in requires if r.name == "setuptools")
    assert "77.0.3" in allowed and "76.1" not in allowed
