"""An out-of-memory error told apart from other errors, the same way in a measured child and in a command's process.

torch raises torch.OutOfMemoryError when its caching allocator cannot get
memory; a CUDA call outside the allocator (cuBLAS, NCCL, a kernel launch)
raises the driver's "CUDA error: out of memory" as a plain RuntimeError, and
the host's allocator raises MemoryError. All three are the failure a memory
gate reports as out-of-memory; nothing here imports torch.
"""

from __future__ import annotations


def is_out_of_memory(kind: str, message: str) -> bool:
    """Whether an exception of type name `kind` with `message` is an out-of-memory error."""
    return kind in ("OutOfMemoryError", "MemoryError") or "out of memory" in message.lower()
