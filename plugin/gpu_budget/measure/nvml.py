"""NVML's figure of one measured child's GPU memory: found without the host's pid namespace, read as a peak.

torch's allocator peaks (allocated, reserved) are exact but miss what CUDA
holds outside the caching allocator (the context, cuBLAS workspaces, NCCL,
other libraries). NVML sees the device, so the meter reports its figure
beside them, never gated.

Which NVML figure is this child's (`DeviceMemory.read`, in this order):

1. "pid": the compute process whose pid is this process's. NVML reports host
   pids, so in a container without the host's pid namespace this never matches.
2. "only-process": exactly one compute process on the device. The parent and
   the forkserver never touch CUDA (tests/integration/test_cuda_free.py), and the session
   measures one child per GPU at a time, so while this child runs, the one
   process is this child.
3. "device-delta": the device's used memory minus what it used before this
   child created its CUDA context (`before_context`, read first thing).
   Correct only while nothing else allocates on the device, which is why it
   comes last; an MIG instance reports its own used memory, so it works there.

A listed pid that is another live process here (`another_here`) is never this
child: NVML's pids are then this pid namespace's, so a child it does not list
holds nothing on the device yet (before its first allocation creates its
context), and no figure is read, neither that process's (another job's, or
another xdist worker's child on a shared GPU) nor a device delta that counts
what it allocates. Only a host pid that happens to be a pid of the
container's own namespace too takes the container's child off "only-process",
to the device delta. Likewise once NVML has listed this process by its pid, a
read whose listing fails (an NVMLError mid-run) or leaves it out gives no
figure, never another process's nor the device's delta.

The method is in the measurement's info ("nvml_method"), so a figure is never
read without knowing how it was matched.

Peak over a phase: a thread samples the figure every SAMPLE_SECONDS (20 ms)
and keeps the largest, plus one read at the phase's end after a synchronize.
Error bound: it is a lower bound of the phase's true peak, exact unless memory
was taken and given back within one interval plus one NVML call. The caching
allocator returns memory to the device only on empty_cache() or when an
allocation fails and it frees its cache to retry, so the NVML figure mostly
moves in steps that stay until such a call; the allocator's own peaks (exact)
bound what the sampling can miss: NVML >= reserved peak + context.

Device ids: torch gives a device's UUID with or without the "GPU-" prefix,
and an MIG instance's UUID is "MIG-..." (or bare). NVML takes the prefixed
form, so a bare UUID is tried as "GPU-" then "MIG-"; a prefixed one as is.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable

SAMPLE_SECONDS = 0.02
METHODS = ("pid", "only-process", "device-delta")


def uuid_candidates(uuid: object) -> list[str]:
    """The NVML UUID strings to try for a device whose torch UUID is `uuid`, in order."""
    text = str(uuid).strip()
    if text.startswith(("GPU-", "MIG-")):
        return [text]
    return [f"GPU-{text}", f"MIG-{text}"]


def _used(nvml, handle) -> int | None:
    try:
        return int(nvml.nvmlDeviceGetMemoryInfo(handle).used)
    except Exception:  # noqa: BLE001  NVML errors are many; no figure is the answer to all of them
        return None


def all_handles(nvml) -> list:
    """Every device handle NVML can name: physical GPUs and, where MIG is on, their instances."""
    handles = []
    try:
        count = nvml.nvmlDeviceGetCount()
    except Exception:  # noqa: BLE001  no device NVML can count: no handles
        return handles
    for index in range(count):
        with contextlib.suppress(Exception):
            gpu = nvml.nvmlDeviceGetHandleByIndex(index)
            handles.append(gpu)
            for mig in range(nvml.nvmlDeviceGetMaxMigDeviceCount(gpu)):
                with contextlib.suppress(Exception):
                    handles.append(nvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, mig))
    return handles


def _uuid_of(nvml, handle) -> str | None:
    try:
        uuid = nvml.nvmlDeviceGetUUID(handle)
    except Exception:  # noqa: BLE001  a handle without a readable UUID cannot be matched: none
        return None
    return uuid.decode() if isinstance(uuid, bytes) else str(uuid)


def before_context(nvml) -> dict[str, int]:
    """Used memory per device UUID, read before this process creates its CUDA context (the "device-delta" zero)."""
    out = {}
    for handle in all_handles(nvml):
        uuid, used = _uuid_of(nvml, handle), _used(nvml, handle)
        if uuid is not None and used is not None:
            out[uuid] = used
    return out


class DeviceMemory:
    """This process's memory on one device, as NVML sees it (the module docstring says how it is matched)."""

    def __init__(self, nvml, handle, uuid: str, pid: int, baseline: int | None) -> None:
        self.nvml, self.handle, self.uuid, self.pid, self.baseline = nvml, handle, uuid, pid, baseline
        self.method: str | None = None  # the last method that gave a figure

    @classmethod
    def open(cls, nvml, torch_uuid: object, pid: int, before: dict[str, int]) -> DeviceMemory | None:
        """The device whose torch UUID is `torch_uuid`, or None when NVML cannot name it."""
        for uuid in uuid_candidates(torch_uuid):
            try:
                handle = nvml.nvmlDeviceGetHandleByUUID(uuid)
            except Exception:  # noqa: BLE001, S112  not this prefix (or NVML cannot see it): the next one
                continue
            return cls(nvml, handle, uuid, pid, before.get(uuid))
        return None

    def read(self) -> int | None:
        """Bytes this process holds on the device now, by the first method that gives a figure."""
        try:
            procs = list(self.nvml.nvmlDeviceGetComputeRunningProcesses(self.handle))
        except Exception:  # noqa: BLE001  MIG without privileges, or a driver that cannot list processes
            procs = []
        used, method = match_process(procs, self.pid, lambda pid: pid != self.pid and another_here(pid))
        if self.method == "pid" and method != "pid":  # listed by its pid before: a failed or partial listing
            used, method = None, "pid"  # reads no other process as this one, nor the device's delta
        if method is None and self.baseline is not None:
            now = _used(self.nvml, self.handle)
            used, method = (max(0, now - self.baseline), "device-delta") if now is not None else (None, None)
        if used is not None:
            self.method = method
        return used


def another_here(pid: object) -> bool:
    """Whether `pid` is a live process of this pid namespace (the caller's own pid aside)."""
    return isinstance(pid, int) and pid > 0 and os.path.exists(f"/proc/{pid}")


def match_process(procs: list, pid: int, elsewhere: Callable[[object], bool] = lambda _pid: False,
                  ) -> tuple[int | None, str | None]:
    """(bytes, method) from NVML's compute processes: by pid, else the only process; (None, None) when neither, and
    (None, "pid") where a listed pid is another process here (`elsewhere`): NVML's pids are this namespace's and it
    lists none of this process, which holds nothing on the device yet."""
    def used(proc) -> int | None:
        value = getattr(proc, "usedGpuMemory", None)
        return int(value) if isinstance(value, int) and value >= 0 else None  # None: NVML_VALUE_NOT_AVAILABLE

    mine = [used(p) for p in procs if getattr(p, "pid", None) == pid]
    if mine and mine[0] is not None:
        return mine[0], "pid"
    if not mine and any(elsewhere(getattr(p, "pid", None)) for p in procs):
        return None, "pid"
    if not mine and len(procs) == 1 and used(procs[0]) is not None:
        return used(procs[0]), "only-process"
    return None, None


class PeakSampler:
    """Keeps the largest value of `read()` seen since the last reset, sampling on a daemon thread."""

    def __init__(self, read: Callable[[], int | None], interval: float = SAMPLE_SECONDS) -> None:
        self._read, self._interval = read, interval
        self._lock = threading.Lock()
        self._peak: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gpu-budget-nvml", daemon=True)
        self._thread.start()

    def _take(self, value: int | None) -> None:
        if value is not None:
            with self._lock:
                self._peak = value if self._peak is None else max(self._peak, value)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._take(self._read())

    def reset(self) -> None:
        """Start a new phase: its peak starts at what the device holds now."""
        value = self._read()
        with self._lock:
            self._peak = value

    def peak(self) -> int | None:
        """The phase's peak so far, with one last read now."""
        self._take(self._read())
        with self._lock:
            return self._peak

    def close(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=1)


def open_for(torch, device: int, before: dict[str, int] | None) -> tuple[DeviceMemory | None, object | None]:
    """(DeviceMemory, pynvml) for torch's `device`, or (None, None) without NVML or without a match."""
    try:
        import pynvml
    except ImportError:
        return None, None
    try:
        pynvml.nvmlInit()
        uuid = torch.cuda.get_device_properties(device).uuid
    except Exception:  # noqa: BLE001  NVML absent (NVMLError_LibraryNotFound) or not initialisable here
        return None, None
    return DeviceMemory.open(pynvml, uuid, os.getpid(), before or {}), pynvml


def snapshot_before_context() -> dict[str, int]:
    """before_context() through pynvml, or {} where NVML is not there: called before the child's CUDA context exists."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001  NVML absent or not initialisable: the figure is left out
        return {}
    return before_context(pynvml)
