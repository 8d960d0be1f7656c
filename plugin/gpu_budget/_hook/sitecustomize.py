"""Runs as every Python process of a command the gate measures starts: the gate puts this folder first on the
command's PYTHONPATH and sets GPU_BUDGET_SOCKET (command.py). Elsewhere it is never on a path.

It installs the gate's hooks (gpu_budget.isolate.autohook), then runs the sitecustomize
this one shadows, if the interpreter has one further down its path.
"""

import os
import sys


def _install() -> None:
    if not os.environ.get("GPU_BUDGET_SOCKET"):
        return
    try:
        from gpu_budget.isolate import autohook
    except ImportError:  # another interpreter than the gate's: the plugin's folder is next to this one
        sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
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
