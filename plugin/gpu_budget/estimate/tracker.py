"""Live tensor bytes of a run, per phase and per category, from the storages its ops create.

A TorchDispatchMode sees every op's outputs; each new untyped storage is
counted once (views share it) and uncounted when the storage dies (a weakref
callback). Every allocation and free goes into a log, so the categories can be
assigned *after* the run: a tensor is only known to be a gradient once
backward has put it in `.grad`, or optimizer state once `step()` has kept it.
Replaying the log with those labels gives the peak, the category split at the
peak, and each phase's own peak.

MEASURED.md: on real CPU tensors this gives a repeatable tensor peak; under
FakeTensorMode it predicts the real CPU tensor peak (estimate/fake.py).

In CUDA mode (`workspace` > 0) the tracker also counts what torch's cuBLAS handles
allocate through the caching allocator, so `max_memory_allocated` sees it: one
workspace per thread that runs a matmul (aten/src/ATen/cuda/CublasHandlePool.cpp keys
them by thread and stream), taken at that thread's first matmul and kept. A training
step has two such threads: the forward's, and autograd's device thread, which runs
backward (and a checkpointed forward's recompute) on CUDA.
"""

from __future__ import annotations

import itertools
import sys
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.weak import WeakIdKeyDictionary

from gpu_budget.model.figures import Fields

CATEGORIES = ("parameters", "gradients", "optimizer_state", "activations", "workspaces")
UNLABELLED = "activations"  # saved activations, temporaries and the input batch
EMPTY_CACHE = -1  # a log entry that frees no tensor: the allocator empties its cache (allocator.py)
BLAS_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "_int_mm"})  # cuBLAS on CUDA


def importing() -> bool:
    """Whether a module is being imported on this thread: its module-level tensors (a lookup table, a default
    argument) live on the CPU and once per process, so a step's estimate must not count them, or the first
    estimate in a process would differ from the next (peft and bitsandbytes import lazily, inside a build)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == "<frozen importlib._bootstrap>":
            return True
        frame = frame.f_back
    return False


def round_up(nbytes: int, granule: int) -> int:
    """An allocator's view of a storage: rounded up to `granule` bytes (CUDA's caching allocator: 512)."""
    if granule <= 1 or nbytes == 0:
        return nbytes
    return -(-nbytes // granule) * granule


@dataclass(frozen=True)
class PhasePeak(Fields):
    """One phase of the log once labelled: its peak and the split at it, and the bytes live at its start and end."""

    name: str
    peak: int
    at_peak: dict[str, int]  # category -> bytes
    start: int
    end: int


@dataclass(frozen=True)
class Replay:
    """What the log says once labelled: peaks in bytes."""

    peak: int
    at_peak: dict[str, int]
    peak_phase: str | None
    phases: list[PhasePeak] = field(default_factory=list)
    final: int = 0


@dataclass
class _Walk:
    """The replay under way: bytes live per category, the peak so far, and the phase open now with its own."""

    current: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    total: int = 0
    peak: int = 0
    at_peak: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    peak_phase: str | None = None
    phases: list[PhasePeak] = field(default_factory=list)
    phase: str | None = None  # the open phase: its name, start, peak so far and the split at it
    phase_start: int = 0
    phase_peak: int = 0
    phase_at_peak: dict[str, int] = field(default_factory=dict)

    def start(self, name: str) -> None:
        self.close()
        self.phase, self.phase_start, self.phase_peak, self.phase_at_peak = name, self.total, self.total, dict(self.current)

    def add(self, category: str, nbytes: int) -> None:
        self.current[category] += nbytes
        self.total += nbytes
        if self.phase is not None and self.total > self.phase_peak:
            self.phase_peak, self.phase_at_peak = self.total, dict(self.current)
        if self.total > self.peak:
            self.peak, self.at_peak, self.peak_phase = self.total, dict(self.current), self.phase

    def close(self) -> None:
        if self.phase is not None:
            self.phases.append(PhasePeak(self.phase, self.phase_peak, self.phase_at_peak, self.phase_start, self.total))

    def done(self) -> Replay:
        self.close()
        return Replay(peak=self.peak, at_peak=self.at_peak, peak_phase=self.peak_phase, phases=self.phases,
                      final=self.total)


class LiveTensors(TorchDispatchMode):
    """Counts the bytes of live storages created under it; `granule` rounds each one (1 = exact).

    workspace: bytes of one cuBLAS workspace (0: none, as on a CPU).
    """

    def __init__(self, granule: int = 1, workspace: int = 0) -> None:
        super().__init__()
        self.granule = granule
        self.workspace = workspace
        self.workspace_threads: list[str] = []  # the threads that took one, in order
        self._keys: WeakIdKeyDictionary = WeakIdKeyDictionary()
        self._refs: dict[int, weakref.ref] = {}
        self._ids = itertools.count()
        self.log: list[tuple[int, int]] = []  # (storage id, +bytes at allocation / -bytes at free)
        self.marks: list[tuple[int, str]] = []  # (log index, phase name)
        self.labels: dict[int, str] = {}
        self.transients = 0

    # -- counting -----------------------------------------------------------
    def track(self, tensor: torch.Tensor) -> int | None:
        """Count `tensor`'s storage if it is new; returns its id (None for a non-tensor)."""
        if not isinstance(tensor, torch.Tensor):
            return None
        storage = tensor.untyped_storage()
        key = self._keys.get(storage)
        if key is not None:
            return key
        key = next(self._ids)
        nbytes = round_up(int(storage.nbytes()), self.granule)
        self._keys[storage] = key
        self._refs[key] = weakref.ref(storage, lambda _ref, key=key, nbytes=nbytes: self._free(key, nbytes))
        self.log.append((key, nbytes))
        return key

    def _free(self, key: int, nbytes: int) -> None:
        self._refs.pop(key, None)
        self.log.append((key, -nbytes))

    def empty_cache(self) -> None:
        """torch.cuda.empty_cache(): no tensor changes; the allocator replay releases its free segments."""
        self.log.append((EMPTY_CACHE, 0))

    def transient(self, nbytes: int) -> None:
        """A workspace an op uses and frees inside itself (not visible as an output)."""
        key = next(self._ids)
        self.transients += 1
        self.log.append((key, round_up(nbytes, self.granule)))
        self.log.append((key, -round_up(nbytes, self.granule)))

    def _blas(self) -> None:
        """A matmul ran: its thread takes a workspace at its first one (backward runs on autograd's thread)."""
        phase = self.marks[-1][1] if self.marks else ""
        thread = "autograd" if ".backward" in phase else "main"
        if thread not in self.workspace_threads:
            self.workspace_threads.append(thread)
            key = next(self._ids)
            self.labels[key] = "workspaces"
            self.log.append((key, round_up(self.workspace, self.granule)))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.workspace and func.overloadpacket.__name__ in BLAS_OPS:
            self._blas()
        out = func(*args, **(kwargs or {}))
        outputs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        if outputs and not importing():
            for tensor in outputs:
                self.track(tensor)
        return out

    # -- phases and labels --------------------------------------------------
    def phase(self, name: str) -> None:
        """Everything logged from now on belongs to phase `name` (phases tile the run)."""
        self.marks.append((len(self.log), name))

    def label(self, tensors: Iterable[torch.Tensor | None], category: str) -> None:
        """Say what these tensors' storages are (the label holds for the storage's whole life)."""
        if category not in CATEGORIES:
            raise ValueError(f"unknown category {category!r} (known: {CATEGORIES})")
        for tensor in tensors:
            if isinstance(tensor, torch.Tensor):
                key = self.track(tensor)
                self.labels.setdefault(key, category)

    # -- replay -------------------------------------------------------------
    def replay(self) -> Replay:
        """Walk the log once: the overall peak and its split, and each phase's peak and split."""
        walk = _Walk()
        marks = list(self.marks)
        log = list(self.log)
        for i in range(len(log) + 1):
            while marks and marks[0][0] == i:
                walk.start(marks.pop(0)[1])
            if i == len(log):
                break
            key, nbytes = log[i]
            walk.add(self.labels.get(key, UNLABELLED), nbytes)
        return walk.done()
