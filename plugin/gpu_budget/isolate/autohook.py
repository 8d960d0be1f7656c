"""What the gate installs in each Python process of a command it measures (the `_hook/sitecustomize.py` there).

- Hugging Face Trainer: when `transformers.trainer` is first imported, the
  gate's callback joins its DEFAULT_CALLBACKS, so every Trainer of the script
  marks its optimizer steps and evaluations as phases (hf_trainer.py) with no
  edit to the script. Nothing of transformers is imported before the script
  imports it.
- Exit reports: as the process exits (atexit; for a forked multiprocessing
  child, multiprocessing's own exit hook), its VmHWM since the tree's last read
  and its shared pages go to the measuring process, so what it did after the
  last poll is counted (tree.py).

Installed only where GPU_BUDGET_SOCKET is set; the plugin never runs it in its own process.
"""

from __future__ import annotations

import atexit
import importlib.machinery
import os
import sys

from gpu_budget import script
from gpu_budget.measure.procfs import read_shared, read_status

TRAINER_MODULE = "transformers.trainer"


class _TrainerWatch:  # a meta path finder (importlib.abc is not imported: it costs more than this hook)
    """Finds transformers.trainer as the path finder would, and attaches the gate's callback once it has run."""

    def find_spec(self, fullname, path, target=None):
        if fullname != TRAINER_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real = spec.loader

        class _Loader:
            def create_module(self, spec):
                return real.create_module(spec)

            def exec_module(self, module):
                real.exec_module(module)
                attach(module)

        spec.loader = _Loader()
        return spec


def attach(trainer_module) -> None:
    """Add the gate's callback class to the Trainer's default callbacks (once)."""
    from gpu_budget.measure.hf_trainer import gate_callback_class

    cls = gate_callback_class()
    if cls not in trainer_module.DEFAULT_CALLBACKS:
        trainer_module.DEFAULT_CALLBACKS.append(cls)


_reported: int | None = None  # the pid that sent its exit report (once per process)


def report_exit() -> None:
    """This process's VmHWM (since the tree's last read) and shared pages, to the measuring process, once."""
    global _reported
    if _reported == os.getpid():
        return
    _reported = os.getpid()
    status, shared = read_status("self"), read_shared("self")
    if status is not None:
        script.send({"exit": status["VmHWM"], "shared": shared})


class _Keep:
    """What multiprocessing's after-fork registry holds weakly for our entry."""


_KEEP = _Keep()


def _arm(_obj) -> None:
    sys.modules["multiprocessing.util"].Finalize(None, report_exit, exitpriority=-1000)


def _after_fork_in_child() -> None:
    """A forked multiprocessing child leaves through os._exit after multiprocessing's finalizers, not atexit; and its
    bootstrap clears the finalizers it inherited before it runs the after-fork registry, so the exit report is armed
    from there (a plain os.fork() child never runs that registry, and is read by the polls only)."""
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        util.register_after_fork(_KEEP, _arm)


def install() -> None:
    if TRAINER_MODULE in sys.modules:
        attach(sys.modules[TRAINER_MODULE])
    else:
        sys.meta_path.insert(0, _TrainerWatch())
    atexit.register(report_exit)
    os.register_at_fork(after_in_child=_after_fork_in_child)
