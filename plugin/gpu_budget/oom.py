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
