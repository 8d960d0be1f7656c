"""Runs as every Python process of a command the gate measures starts: the gate puts this folder first on the
command's PYTHONPATH and sets GPU_BUDGET_SOCKET (command.py). Elsewhere it is never on a path.

It installs the gate's hooks (gpu_budget.isolate.autohook), then runs the sitecustomize
this one shadows, if the interpreter has one further down its path.

The hooks are the gpu_budget package this folder is part of, the measuring process's own, whatever the
command's interpreter holds: another venv's Python may have another version of the plugin installed (whose
marks would not be the ones this gate reads), or none. Only that package is taken from the plugin's folder:
where the plugin is installed, that folder is the gate's site-packages, whose every other package the
command's interpreter would otherwise import in place of one it lacks.
"""

import os
import sys

PACKAGE = "gpu_budget"


def _own_plugin() -> None:
    """Import the package this hook belongs to as `gpu_budget` (where no gpu_budget is imported yet)."""
    if PACKAGE in sys.modules:
        return
    import importlib.machinery
    import importlib.util

    folder = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    spec = importlib.machinery.PathFinder.find_spec(PACKAGE, [folder])
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(PACKAGE, None)
        raise


def _install() -> None:
    if not os.environ.get("GPU_BUDGET_SOCKET"):
        return
    _own_plugin()
    from gpu_budget.isolate import autohook

    autohook.install()


def _chain() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


try:
    _install()
except Exception as exc:  # noqa: BLE001  the user's script runs either way; the gate reports the missing phases
    print(f"gpu_budget: the gate's hooks were not installed here: {exc!r}", file=sys.stderr)
_chain()
