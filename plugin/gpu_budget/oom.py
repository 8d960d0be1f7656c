"""An out-of-memory error told apart from other errors, the same way in a measured child and in a command's process.

torch raises torch.OutOfMemoryError when its caching allocator cannot get
memory; a CUDA call outside the allocator (cuBLAS, NCCL, a kernel launch)
raises the driver's "CUDA error: out of memory" as a plain RuntimeError; on
the CPU, torch's host allocator raises a plain RuntimeError too ("DefaultCPUAllocator:
can't allocate memory", "not enough memory" before torch 2), and Python's and
NumPy's raise MemoryError. All are the failure a memory gate reports as
out-of-memory; `memory_of` tells which memory ran out, host RAM or the GPU's;
nothing here imports torch.
"""

from __future__ import annotations

import re

_SAID = ("out of memory", "defaultcpuallocator: can't allocate memory", "defaultcpuallocator: not enough memory")


def is_out_of_memory(kind: str, message: str) -> bool:
    """Whether an exception of type name `kind` with `message` is an out-of-memory error."""
    low = message.lower()
    return kind in ("OutOfMemoryError", "MemoryError") or any(said in low for said in _SAID)


_HOST = re.compile(r"(?:\b|_Array)MemoryError\b|DefaultCPUAllocator", re.IGNORECASE)  # not torch's OutOfMemoryError


def memory_of(kind: str | None, message: str) -> str:
    """"host" where an out-of-memory error (`kind` its type's name, qualified or not; a command's is in its message)
    ran out of host RAM (Python's or NumPy's MemoryError, torch's host allocator), else "gpu" (torch.OutOfMemoryError,
    the driver's "CUDA error: out of memory")."""
    return "host" if _HOST.search(f"{kind or ''} {message}") else "gpu"


OOM_KILLER = " (the kernel's OOM killer sends SIGKILL)"
# torch's DataLoader whose worker a signal ended: the error its main process raises first (the cause of the "DataLoader
# worker (pid(s) N) exited unexpectedly" it ends with), the signal in strsignal's words, SIGKILL's being "Killed"
_WORKER_KILLED = re.compile(r"DataLoader worker \(pid (\d+)\) is killed by signal: Killed\.")


def worker_killed(text: str) -> str | None:
    """The pid of a DataLoader worker that `text` (an error's message, a stderr) says SIGKILL ended, or None: the
    kill the OOM killer makes of the process that grew, read the same in a command's stderr and in run(ctx)'s error."""
    found = _WORKER_KILLED.search(text)
    return found.group(1) if found else None
