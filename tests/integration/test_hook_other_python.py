"""The gate's hook in a command run by another venv's Python (plugin/gpu_budget/_hook/sitecustomize.py).

The hook is the plugin the measuring process runs, whatever that interpreter
holds: it imports that gpu_budget from beside the hook's folder, and nothing
else from there (where the plugin is installed, that folder is the gate's
site-packages). A fresh venv made here (no pip, a quarter of a second) stands
for the user's own.
"""

import os
import shutil
import subprocess
import venv
from pathlib import Path

from gpu_budget.isolate.command import HOOK_DIR

PROBE = ("import sys, importlib.util, gpu_budget; print('gpu_budget.isolate.autohook' in sys.modules, "
         "gpu_budget.__file__, importlib.util.find_spec('beside') is not None)")


def other_python(where: Path) -> str:
    venv.create(where, with_pip=False)
    return str(where / "bin" / "python")


def hooked(python: str, hook_dir: str, tmp_path: Path) -> tuple[str, str]:
    """What PROBE printed under the gate's environment (the hook first on PYTHONPATH, a socket named), and stderr."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(GPU_BUDGET_SOCKET=str(tmp_path / "no-socket"), PYTHONPATH=hook_dir)
    done = subprocess.run([python, "-c", PROBE], env=env, capture_output=True, text=True, check=True, cwd=tmp_path)
    return done.stdout.strip(), done.stderr


def test_another_pythons_own_version_of_the_plugin_does_not_stand_in_for_the_gates(tmp_path):
    """Before: that version's gpu_budget was imported, the hook failed ("gpu_budget: the gate's hooks were not
    installed here: ModuleNotFoundError(\"No module named 'gpu_budget.isolate'...")") and the script's marks went to
    a no-op: no phase, step or exit report."""
    python = other_python(tmp_path / "venv")
    site = next((tmp_path / "venv" / "lib").glob("python*/site-packages"))
    (site / "gpu_budget").mkdir()
    (site / "gpu_budget" / "__init__.py").write_text("def phase(name, step=None):\n    pass  # another version\n")
    out, err = hooked(python, HOOK_DIR, tmp_path)
    assert "not installed" not in err, err
    own = str(Path(HOOK_DIR).parent / "__init__.py")
    assert out == f"True {own} False", out


def test_another_python_takes_the_gates_plugin_and_no_other_package_beside_it(tmp_path):
    """The plugin installed in a site-packages (a copy of it here, beside a module `beside`). Before: the hook put
    that whole folder on the command's sys.path, so `beside` (torch, transformers in the gate's own venv) was
    importable where the command's interpreter has none: `True ... True`."""
    python = other_python(tmp_path / "venv")
    installed = tmp_path / "site-packages"
    shutil.copytree(Path(HOOK_DIR).parent, installed / "gpu_budget", ignore=shutil.ignore_patterns("__pycache__"))
    (installed / "beside.py").write_text("")
    out, err = hooked(python, str(installed / "gpu_budget" / "_hook"), tmp_path)
    assert "not installed" not in err, err
    assert out == f"True {installed / 'gpu_budget' / '__init__.py'} False", out
