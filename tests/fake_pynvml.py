"""A stand-in for pynvml with one GPU, for tests of the CUDA path on a host without a GPU.

Copied as `pynvml.py` into a throwaway project beside tests/fake_torch.py: the processes that use the stand-in
torch write what NVML would list for them into FAKE_NVML_DIR (one file per pid), and this module lists the
live ones as the device's compute processes, as NVML lists a GPU's processes to any process on the host.
No GPU figure: what the stand-in torch planted.
"""

import os
import types

UUID = "GPU-0000"


def nvmlInit():
    if not os.environ.get("FAKE_NVML_DIR"):
        raise RuntimeError("NVML Shared Library Not Found (FAKE_NVML_DIR is not set)")


def nvmlSystemGetDriverVersion():
    return "0.0.fake"


def nvmlDeviceGetCount():
    return 1


def nvmlDeviceGetHandleByIndex(index):
    return UUID


def nvmlDeviceGetHandleByUUID(uuid):
    if uuid != UUID:
        raise RuntimeError(f"no device {uuid}")
    return UUID


def nvmlDeviceGetMaxMigDeviceCount(handle):
    return 0


def nvmlDeviceGetUUID(handle):
    return UUID


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def nvmlDeviceGetComputeRunningProcesses(handle):
    folder = os.environ["FAKE_NVML_DIR"]
    out = []
    for name in os.listdir(folder):
        if name.isdigit() and _alive(int(name)):
            with open(os.path.join(folder, name)) as fh:
                out.append(types.SimpleNamespace(pid=int(name), usedGpuMemory=int(fh.read())))
    return out


def nvmlDeviceGetMemoryInfo(handle):
    return types.SimpleNamespace(used=sum(p.usedGpuMemory for p in nvmlDeviceGetComputeRunningProcesses(handle)))
