"""The GPU memory of a command's whole process tree: NVML's figures of its processes, summed, as a peak over time.

A command's own process reports its allocator's peaks itself (script.py), but
an evaluation subprocess or a data process that moves tensors to the GPU holds
memory of its own, which only NVML sees. The node's figure (`vram_tree`) is
the **peak over time of the summed figures** of the tree's processes, as the
host-RAM tree's is (tree.py): a poller reads NVML's compute processes every
SAMPLE_SECONDS, sums those that belong to the tree at that moment, and keeps
the largest sum per phase, so two processes that never hold memory at the
same time are never added.

How a process is matched (`method`, in the measurement's info):

- "pid": NVML lists host pids; where they are this host's (no container with
  a pid namespace of its own), a process of the tree is found by its pid.
- "device-delta": where NVML lists processes but none of them by a pid of the
  tree, and no poll of this run ever matched one, the used memory of the GPUs
  the tree's processes said they use (their NVML ids, sent with their
  figures), less what those GPUs held when the command started. Correct only
  while nothing else allocates there; the session measures one child per GPU.

A lower bound of the true peak: memory taken and given back within one
interval is missed (the caching allocator gives memory back only on
empty_cache, so NVML's figures mostly move in steps that stay). Needs only
NVML: nothing here initialises CUDA.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from gpu_budget.measure import nvml

SAMPLE_SECONDS = nvml.SAMPLE_SECONDS


@dataclass(frozen=True)
class GpuTreeReading:
    """One phase's NVML figures of the tree: the largest summed poll, in all and per rank (bytes)."""

    total: int | None  # None: no poll matched any process of the tree
    ranks: dict[int, int] = field(default_factory=dict)  # rank -> the largest sum of that rank's processes
    method: str | None = None


class GpuTree:
    """Polls NVML on a thread for the processes `members()` names ({pid: rank or None}); one reading per phase."""

    def __init__(self, library, members: Callable[[], dict[int, int | None]], interval: float = SAMPLE_SECONDS) -> None:
        self.nvml, self.members, self.interval = library, members, interval
        self.handles = nvml.all_handles(library)
        self.before = nvml.before_context(library)  # used per GPU before the command made a CUDA context
        self.devices: set[str] = set()  # the GPUs the tree's processes said they use (their NVML ids)
        self._lock = threading.Lock()
        self._total: int | None = None
        self._ranks: dict[int, int] = {}
        self._method: str | None = None
        self._by_pid = False  # some poll of this run matched a process by its pid: no device-delta from then on
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gpu-budget-gpu-tree", daemon=True)

    @classmethod
    def open(cls, members: Callable[[], dict[int, int | None]]) -> GpuTree | None:
        """A started poller, or None where NVML cannot be loaded or sees no GPU (a CPU host)."""
        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception:  # noqa: BLE001  NVML absent (NVMLError_LibraryNotFound) or not initialisable here
            return None
        tree = cls(pynvml, members)
        if not tree.handles:
            return None
        tree._thread.start()
        return tree

    def note_device(self, uuid: str) -> None:
        """A process of the tree said it uses this GPU (for the device-delta match)."""
        self.devices.add(str(uuid))

    def _processes(self) -> list:
        out = []
        for handle in self.handles:
            try:
                out += list(self.nvml.nvmlDeviceGetComputeRunningProcesses(handle))
            except Exception:  # noqa: BLE001, S112  a device that cannot list its processes: none from it
                continue
        return out

    def poll(self) -> None:
        """Sum the tree's processes now, and keep the phase's largest sums."""
        members = self.members()
        total, ranks, method = 0, {}, None
        listed = self._processes()
        for proc in listed:
            pid, used = getattr(proc, "pid", None), getattr(proc, "usedGpuMemory", None)
            if pid in members and isinstance(used, int) and used >= 0:
                total, method, self._by_pid = total + used, "pid", True
                rank = members[pid]
                if rank is not None:
                    ranks[rank] = ranks.get(rank, 0) + used
        if method is None and listed and self.devices and not self._by_pid:
            deltas = [self._delta(uuid) for uuid in sorted(self.devices)]
            if any(d is not None for d in deltas):
                total, method = sum(d for d in deltas if d is not None), "device-delta"
        if method is None:
            return
        with self._lock:
            self._total = total if self._total is None else max(self._total, total)
            for rank, value in ranks.items():
                self._ranks[rank] = max(self._ranks.get(rank, 0), value)
            self._method = method

    def _delta(self, uuid: str) -> int | None:
        try:
            handle = self.nvml.nvmlDeviceGetHandleByUUID(uuid)
            used = int(self.nvml.nvmlDeviceGetMemoryInfo(handle).used)
        except Exception:  # noqa: BLE001  NVML cannot name or read it: no figure from it
            return None
        return max(0, used - self.before.get(uuid, 0))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def running(self) -> GpuTreeReading:
        """The open phase's largest sums so far (no poll, nothing reset): what a child streams, so that a case stopped
        mid-phase keeps them (child._TreeStream)."""
        with self._lock:
            return GpuTreeReading(self._total, dict(self._ranks), self._method)

    def phase_end(self) -> GpuTreeReading:
        """The phase's reading (one last poll now); the next phase starts from nothing."""
        self.poll()
        with self._lock:
            reading = GpuTreeReading(self._total, dict(self._ranks), self._method)
            self._total, self._ranks = None, {}
        return reading

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=1)
