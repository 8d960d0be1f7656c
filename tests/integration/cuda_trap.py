"""A trap on torch's CUDA entry points, for tests: every call is recorded with the process that made it.

Put this file's folder on PYTHONPATH as `sitecustomize` (tests/integration/test_cuda_free.py
does), or import it before torch: once `torch.cuda` is imported, its entry
points (and the C functions beneath them that start the CUDA runtime) are
wrapped. Each call appends one JSON line to $GPU_BUDGET_CUDA_TRAP: the function,
the pid, whether the process is a forked child (os.register_at_fork) and the
innermost frames outside torch. The call then goes through unchanged, so a
CPU host behaves as it would without the trap.

A forked child (a measured child, the probe) may use CUDA. Any other process
(the pytest parent, the forkserver, an xdist worker) must not: a child forked
from a process that initialised CUDA cannot use CUDA.
"""

import importlib.abc
import importlib.machinery
import json
import os
import sys
import traceback

ENTRY_POINTS = ("is_available", "device_count", "init", "_lazy_init", "current_device", "get_device_capability",
                "get_device_properties", "get_device_name", "get_arch_list", "mem_get_info", "set_device",
                "synchronize", "is_bf16_supported", "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats")
C_ENTRY_POINTS = ("_cuda_init", "_cuda_getDeviceCount", "_cuda_getDevice", "_cuda_setDevice")
_state = {"forked": False, "armed": False}


def _record(name: str) -> None:
    path = os.environ.get("GPU_BUDGET_CUDA_TRAP")
    if not path:
        return
    frames = [f for f in traceback.extract_stack()[:-2] if f"{os.sep}torch{os.sep}" not in f.filename]
    line = {"fn": name, "pid": os.getpid(), "forked": _state["forked"], "argv": " ".join(sys.argv)[:200],
            "stack": [f"{f.filename}:{f.lineno} {f.name}" for f in frames[-6:]]}
    with open(path, "a") as fh:
        fh.write(json.dumps(line) + "\n")


def _wrap(owner, name: str, label: str) -> None:
    original = getattr(owner, name, None)
    if original is None or getattr(original, "_cuda_trap", False):
        return

    def trapped(*args, **kwargs):
        _record(label)
        return original(*args, **kwargs)

    trapped._cuda_trap = True
    setattr(owner, name, trapped)


def arm(cuda_module) -> None:
    """Wrap the entry points of an imported torch.cuda (and torch._C's CUDA functions)."""
    import torch

    for name in ENTRY_POINTS:
        _wrap(cuda_module, name, f"torch.cuda.{name}")
    for name in C_ENTRY_POINTS:
        _wrap(torch._C, name, f"torch._C.{name}")
    _state["armed"] = True


class _ArmAfterImport(importlib.abc.MetaPathFinder):
    """Finds torch.cuda through the normal machinery and arms the trap once it has executed."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch.cuda":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_and_arm(module):
            exec_module(module)
            arm(module)

        loader.exec_module = exec_and_arm
        return spec


def install() -> None:
    os.register_at_fork(after_in_child=lambda: _state.update(forked=True))
    if "torch.cuda" in sys.modules:
        arm(sys.modules["torch.cuda"])
    else:
        sys.meta_path.insert(0, _ArmAfterImport())


if os.environ.get("GPU_BUDGET_CUDA_TRAP"):
    install()
