"""The live tensor-bytes peak of a CPU run: the CPU counterpart of CUDA's allocated peak.

A TorchDispatchMode sees every op's outputs; each new storage is counted once
(views share it) and uncounted when it dies (a weakref callback on the
storage). The high-water mark of that count is a property of the program, not
of the machine: the same run gave the same bytes under every ATen CPU
capability level and thread count tried (MEASURED.md, "Across machines"),
where the RSS peak moved with both. It counts what ops produce: memory that
never passes through an op (numpy arrays, Python objects, a library's own
buffers) is RSS's to see, so RSS stays the budget's metric. A dispatch mode
is per thread (torch keeps its mode stack per thread): it counts the ops of the
thread that entered it, the one running run(ctx), not those of a thread the run
starts.

Unlike the estimator's tracker (estimate/tracker.py) nothing is logged: memory
is O(live storages), so the tracker does not grow the peak it sits beside.
"""

from __future__ import annotations

import weakref

from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode


class _Ref(weakref.ref):
    """A weak reference to a counted storage that knows its key and size (one small object per storage)."""

    __slots__ = ("key", "nbytes")


class TensorPeak(TorchDispatchMode):
    """Live bytes of the storages ops create under it; `peak` since the last reset()."""

    def __init__(self) -> None:
        super().__init__()
        self._live: dict[int, _Ref] = {}  # id of a live storage's Python object -> its reference
        self.live = 0
        self.peak = 0

    def reset(self) -> None:
        """Start a new window: its peak starts at what is live now."""
        self.peak = self.live

    def _free(self, ref: _Ref) -> None:
        if self._live.get(ref.key) is ref:
            del self._live[ref.key]
            self.live -= ref.nbytes

    def _count(self, tensor) -> None:
        """Count a storage an op returned: a new one at its size, a counted one at its size now (an op writing into a
        smaller tensor, `out=` or `resize_`, grows its storage in place)."""
        storage = tensor.untyped_storage()  # the same Python object while the storage lives: a weak ref keeps it so
        key, nbytes = id(storage), int(storage.nbytes())
        ref = self._live.get(key)
        if ref is None:
            ref = _Ref(storage, self._free)
            ref.key, ref.nbytes = key, 0
            self._live[key] = ref
        self.live += nbytes - ref.nbytes
        ref.nbytes = nbytes
        self.peak = max(self.peak, self.live)

    def _count_all(self, out) -> None:
        if isinstance(out, Tensor):
            if out.device.type == "cpu":
                self._count(out)
        elif isinstance(out, (tuple, list)):
            for item in out:
                self._count_all(item)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self._count_all(out)
        return out
