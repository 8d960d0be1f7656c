"""NVML matching and peak sampling, on stand-in NVML objects: the logic, not a measurement (no GPU figure here)."""

import os
import threading
import time
from types import SimpleNamespace

import pytest

from gpu_budget.measure import nvml

GiB = 2**30
HOST_PID, OTHER_HOST_PID = 2**22 + 42, 2**22 + 43  # past the largest pid_max: no process here has them


def proc(pid, used):
    return SimpleNamespace(pid=pid, usedGpuMemory=used)


class FakeNvml:
    """Devices by UUID (one GPU with one MIG instance), their used memory and compute processes."""

    def __init__(self, used=None, procs=None):
        self.used = used or {"GPU-aaaa": 10 * GiB, "MIG-bbbb": 1 * GiB}
        self.procs = procs or {}
        self.by_handle = {"h-gpu": "GPU-aaaa", "h-mig": "MIG-bbbb"}

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return "h-gpu"

    def nvmlDeviceGetMaxMigDeviceCount(self, handle):
        return 2

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle, i):
        if i:
            raise RuntimeError("NVML_ERROR_NOT_FOUND")
        return "h-mig"

    def nvmlDeviceGetUUID(self, handle):
        return self.by_handle[handle].encode()  # older pynvml returns bytes

    def nvmlDeviceGetHandleByUUID(self, uuid):
        for handle, known in self.by_handle.items():
            if known == uuid:
                return handle
        raise RuntimeError("NVML_ERROR_NOT_FOUND")

    def nvmlDeviceGetMemoryInfo(self, handle):
        return SimpleNamespace(used=self.used[self.by_handle[handle]])

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        if self.procs.get(handle) == "denied":
            raise RuntimeError("NVML_ERROR_NO_PERMISSION")
        return self.procs.get(handle, [])


@pytest.mark.parametrize("uuid, tried", [
    ("GPU-1234", ["GPU-1234"]), ("MIG-1234", ["MIG-1234"]), ("1234", ["GPU-1234", "MIG-1234"]),
])
def test_uuid_candidates_never_prefix_a_prefixed_uuid(uuid, tried):
    assert nvml.uuid_candidates(uuid) == tried


def test_a_mig_instance_is_found_by_its_bare_uuid_and_an_unknown_device_is_none():
    fake = FakeNvml()
    memory = nvml.DeviceMemory.open(fake, "bbbb", pid=7, before={})
    assert memory is not None and memory.uuid == "MIG-bbbb" and memory.handle == "h-mig"
    assert nvml.DeviceMemory.open(fake, "cccc", pid=7, before={}) is None


def test_matching_by_pid_then_the_only_process_then_the_device_delta():
    assert nvml.match_process([proc(7, 3 * GiB), proc(8, 5 * GiB)], 7) == (3 * GiB, "pid")
    # another pid namespace: our pid is not listed; one process on the device is ours
    assert nvml.match_process([proc(HOST_PID, 3 * GiB)], 7) == (3 * GiB, "only-process")
    assert nvml.match_process([proc(HOST_PID, 3 * GiB), proc(OTHER_HOST_PID, 1)], 7) == (None, None)  # cannot tell
    assert nvml.match_process([proc(7, None)], 7) == (None, None)  # NVML_VALUE_NOT_AVAILABLE

    fake = FakeNvml(procs={"h-gpu": [proc(HOST_PID, 3 * GiB), proc(OTHER_HOST_PID, 1)]})
    before = nvml.before_context(fake)
    assert before == {"GPU-aaaa": 10 * GiB, "MIG-bbbb": 1 * GiB}
    memory = nvml.DeviceMemory.open(fake, "GPU-aaaa", pid=7, before=before)
    fake.used["GPU-aaaa"] = 13 * GiB
    assert memory.read() == 3 * GiB and memory.method == "device-delta"
    fake.procs["h-gpu"] = "denied"  # MIG without privileges: no process list, the delta still answers
    assert memory.read() == 3 * GiB
    fake.procs["h-gpu"] = [proc(7, 2 * GiB)]
    assert memory.read() == 2 * GiB and memory.method == "pid"


def test_another_process_here_is_never_this_processs_figure_nor_is_the_delta_it_makes():
    """A GPU shared with another job (or another xdist worker's child): before this process's first allocation
    NVML lists only the other one, whose pid is a live process of this pid namespace, so it is not this process and
    no figure is read (the device's used memory grows by what the other one allocates); once NVML lists this
    process, its pid gives the figure."""
    other = os.getppid()
    fake = FakeNvml(procs={"h-gpu": [proc(other, 5 * GiB)]})
    memory = nvml.DeviceMemory.open(fake, "GPU-aaaa", pid=os.getpid(), before=nvml.before_context(fake))
    fake.used["GPU-aaaa"] += 2 * GiB  # the other process allocates
    assert memory.read() is None and memory.method is None
    fake.procs["h-gpu"] = [proc(other, 7 * GiB), proc(os.getpid(), 1 * GiB)]
    assert memory.read() == 1 * GiB and memory.method == "pid"


def test_once_matched_by_its_pid_a_failed_listing_reads_no_device_delta():
    """NVML failing mid-run (an NVMLError listing the processes): a process NVML has listed by its pid is never read
    as the device's delta from then on, which counts what every other process allocated since this one started."""
    fake = FakeNvml(procs={"h-gpu": [proc(7, 2 * GiB)]})
    memory = nvml.DeviceMemory.open(fake, "GPU-aaaa", pid=7, before=nvml.before_context(fake))
    assert memory.read() == 2 * GiB and memory.method == "pid"
    fake.procs["h-gpu"] = "denied"
    fake.used["GPU-aaaa"] += 6 * GiB  # this process's 2 GiB and another's 4 GiB
    assert memory.read() is None and memory.method == "pid"


def test_without_a_match_or_a_zero_there_is_no_figure():
    memory = nvml.DeviceMemory.open(FakeNvml(), "aaaa", pid=7, before={})  # no before-context reading
    assert memory.read() is None and memory.method is None


def test_the_sampler_keeps_a_spike_that_is_gone_by_the_phase_end():
    value = {"now": 1 * GiB}
    sampler = nvml.PeakSampler(lambda: value["now"], interval=0.001)
    try:
        sampler.reset()
        value["now"] = 5 * GiB
        deadline = time.monotonic() + 5
        while sampler._peak != 5 * GiB and time.monotonic() < deadline:  # the thread samples it within an interval
            time.sleep(0.001)
        value["now"] = 2 * GiB
        assert sampler.peak() == 5 * GiB
        sampler.reset()
        assert sampler.peak() == 2 * GiB  # a new phase starts at what is held now
    finally:
        sampler.close()
    assert not any(t.name == "gpu-budget-nvml" and t.is_alive() for t in threading.enumerate())
