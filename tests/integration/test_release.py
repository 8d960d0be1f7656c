"""The release check (.ci/release_check.py), run here as the release workflow runs it: a real build, a real venv.

The sdist and the wheel are built and checked by twine, the sdist is installed into a fresh venv (no system
site-packages: only the plugin's own requirements, from the package index, at the lock's pins) and a command case
is gated there twice, recorded then judged. It skips only where the package index cannot be reached.
"""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / ".ci" / "release_check.py"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK), *args], cwd=ROOT, check=False, capture_output=True, text=True,
                          timeout=600)


def test_the_sdist_installs_alone_and_gates_a_command_case(tmp_path):
    for tool in ("build", "twine"):
        if importlib.util.find_spec(tool) is None:
            pytest.fail(f"{tool} is not installed: pip install -c constraints/cpu.txt -e '.[dev]'")
    done = check("--dist", str(tmp_path / "dist"), "--work", str(tmp_path / "work"))
    out = done.stdout + done.stderr
    if done.returncode == 3:
        pytest.skip("the package index cannot be reached: " + out.strip().splitlines()[-1])
    assert done.returncode == 0, out[-6000:]
    stem = f"pytest_gpu_budget-{VERSION}"
    assert sorted(p.name for p in (tmp_path / "dist").iterdir()) == [f"{stem}-py3-none-any.whl", f"{stem}.tar.gz"]
    assert out.count("PASSED") == 2  # twine check --strict, the sdist and the wheel
    held = out.split("-m pip list --format=freeze\n", 1)[1].split("release-check: ", 1)[0]  # the fresh venv's packages
    names = {line.split("==")[0].lower() for line in held.splitlines() if "==" in line}
    assert {"pytest-gpu-budget", "pytest", "psutil", "tabulate"} <= names, held
    assert not names & {"torch", "transformers", "numpy", "hypothesis"}, held  # the plugin's own requirements only
    assert f"pytest-gpu-budget=={VERSION}" in held.splitlines()
    assert f"\npytest-gpu-budget {VERSION}\n" in out  # python -m gpu_budget --version in the fresh venv
    assert "release-check: command case: no-baseline" in out and "release-check: command case: pass" in out
    assert len(list((tmp_path / "work" / "project" / "baselines").glob("*/test_release_case.json"))) == 1


def test_a_tag_that_names_another_version_fails_before_building(tmp_path):
    done = check("--dist", str(tmp_path / "dist"), "--tag", "v0.0.0-not-this")
    assert done.returncode == 1
    assert f"tag v0.0.0-not-this does not name pyproject.toml's version {VERSION} (v{VERSION})" in done.stdout
    assert not (tmp_path / "dist").exists()


@pytest.mark.parametrize(("section", "said"), [
    ("## [1.2.3] - Unreleased", "CHANGELOG.md's section for 1.2.3 is dated 'Unreleased': give it the release's date"),
    ("## [1.2.2] - 2026-01-02", "CHANGELOG.md has no section '## [1.2.3] - <date>' for pyproject.toml's version"),
])
def test_a_tagged_release_needs_a_dated_changelog_section(tmp_path, section, said):
    """The script's own tree is its project: a copy beside a pyproject.toml at 1.2.3 and a CHANGELOG.md."""
    (tmp_path / ".ci").mkdir()
    shutil.copy(CHECK, tmp_path / ".ci")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "pytest-gpu-budget"\nversion = "1.2.3"\n')
    (tmp_path / "CHANGELOG.md").write_text(f"# Changelog\n\n{section}\n\n### Added\n\n- it\n")
    done = subprocess.run([sys.executable, str(tmp_path / ".ci" / "release_check.py"), "--dist", str(tmp_path / "dist"),
                           "--tag", "v1.2.3"], check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and said in done.stdout, done.stdout + done.stderr
    assert not (tmp_path / "dist").exists()
