"""The live tensor-bytes peak of a CPU run: the CPU counterpart of CUDA's allocated peak.

A TorchDispatchMode sees every op's outputs; each new storage is counted once
(views share it) and uncounted when it dies (a weakref callback on the
storage). The high-water mark of that count is a property of the program, not
of the machine: the same run gave the same bytes under every ATen CPU
capability level and thread count tried (MEASURED.md, "Across machines"),
where the RSS peak moved with both. It counts what ops produce: memory that
never passes through an op (numpy arrays, Python objects, a library's own
buffers) is RSS's to see, so RSS stays the budget's metric.

Unlike the estimator's tracker (estimate_tracker.py) nothing is logged: memory
is O(live storages), so the tracker does not grow the peak it sits beside.
"""

from __future__ import annotations

import weakref

from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.weak import WeakIdKeyDictionary


class TensorPeak(TorchDispatchMode):
    """Live bytes of the storages ops create under it; `peak` since the last reset()."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: WeakIdKeyDictionary = WeakIdKeyDictionary()
        self._refs: set[weakref.ref] = set()
        self.live = 0
        self.peak = 0

    def reset(self) -> None:
        """Start a new window: its peak starts at what is live now."""
        self.peak = self.live

    def _count(self, tensor) -> None:
        storage = tensor.untyped_storage()
        if storage in self._seen:
            return
        nbytes = int(storage.nbytes())
        self._seen[storage] = nbytes
        self.live += nbytes
        self.peak = max(self.peak, self.live)
        self._refs.add(weakref.ref(storage, self._freer(nbytes)))

    def _freer(self, nbytes: int):
        def free(ref: weakref.ref) -> None:
            self._refs.discard(ref)
            self.live -= nbytes
        return free

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
