"""The package's levels (pyproject.toml [tool.importlinter]): no module imports from a level above its own.

Checked by import-linter, a kept tool, on the package's source; a planted upward import makes it fail.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))


def lint(root: Path) -> subprocess.CompletedProcess:
    if not Path(LINT).exists():
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    return subprocess.run([LINT, "--config", str(ROOT / "pyproject.toml")], cwd=root, capture_output=True, text=True, check=False,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root / "plugin")})


def test_no_module_imports_from_a_level_above_its_own():
    out = lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 kept, 0 broken" in out.stdout


def test_a_planted_upward_import_breaks_the_contract(tmp_path):
    shutil.copytree(ROOT / "plugin", tmp_path / "plugin")
    meter = tmp_path / "plugin" / "gpu_budget" / "measure" / "meter.py"
    meter.write_text(meter.read_text() + "\nfrom gpu_budget.session import case  # planted\n")
    out = lint(tmp_path)
    assert out.returncode != 0 and "gpu_budget.measure is not allowed to import gpu_budget.session" in out.stdout
