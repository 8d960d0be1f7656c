"""A stand-in for torch with one CUDA device, for tests of the CUDA path on a host without a GPU.

Copied as `torch.py` into a throwaway project whose forkserver preloads it instead of the real torch
(tests/conftest.py, fake_cuda), and which a command's processes import from the project's folder. Peaks
are what a runner or script plants; nothing here is a GPU figure. It obeys CUDA_VISIBLE_DEVICES=""
(no device), records the allocation-history recorder's state, raises OutOfMemoryError where a runner
asks, and can turn "sticky": after make_sticky(message) every device call raises that message, as after
an illegal memory access on a real GPU.

Memory: alloc(n) holds n bytes until free(n), spike(n) takes n more for an instant, plant(n) sets the
peak to n; the peak resets to what is held, as torch's does. Reserved is the peak plus 1 GiB. Under
set_per_process_memory_fraction(f) a step that would reserve more than f x the device's total raises
OutOfMemoryError, as the caching allocator does once freeing its cache and retrying is not enough. Where FAKE_NVML_DIR is set, each process
writes there what NVML would list for it (tests/fake_pynvml.py): its reserved memory, which the caching
allocator never gives back, plus a context of CONTEXT bytes. The device is a "Fake GPU" of 16 GiB unless
FAKE_GPU_NAME and FAKE_GPU_TOTAL (bytes) name another, as a runner's own card prints its name and total.
"""

import os
import pickle
import types

CONTEXT = 300 << 20
TOTAL = int(os.environ.get("FAKE_GPU_TOTAL", str(16 << 30)))
NAME = os.environ.get("FAKE_GPU_NAME", "Fake GPU")

version = types.SimpleNamespace(cuda="12.4")
recorder = {"on": False, "calls": []}
_sticky = {"error": None}


class OutOfMemoryError(RuntimeError):
    pass


def set_num_threads(n):
    pass


def _device_call():
    if _sticky["error"]:
        raise RuntimeError(_sticky["error"])


class _Cuda:
    peak = 0
    held = 0  # allocated now
    reserved = 0  # the most ever reserved: NVML's figure less the context
    limit = None  # set_per_process_memory_fraction's cap, in bytes

    def is_available(self):
        return os.environ.get("CUDA_VISIBLE_DEVICES", "0") != ""

    def current_device(self):
        _device_call()
        return 0

    def is_initialized(self):
        return self.is_available()

    def device_count(self):
        """The GPUs CUDA_VISIBLE_DEVICES leaves this process (one where it is unset), as CUDA counts them."""
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        return 1 if visible is None else len([v for v in visible.split(",") if v.strip()])

    def get_device_properties(self, device):
        return types.SimpleNamespace(name=NAME, total_memory=TOTAL, uuid="GPU-0000")

    def set_per_process_memory_fraction(self, fraction, device=None):
        _device_call()
        if not 0 <= fraction <= 1:
            raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
        _Cuda.limit = int(fraction * TOTAL)

    def memory_reserved(self, device=None):
        return _Cuda.peak + 2**30

    def mem_get_info(self, device=None):
        """(free, total): this process's reserved memory and context are all the stand-in device holds."""
        return TOTAL - self.memory_reserved() - CONTEXT, TOTAL

    def synchronize(self, device=None):
        _device_call()

    def reset_peak_memory_stats(self, device=None):
        _device_call()
        _Cuda.peak = _Cuda.held

    def max_memory_allocated(self, device=None):
        return _Cuda.peak

    def max_memory_reserved(self, device=None):
        return _Cuda.peak + 2**30

    def plant(self, nbytes):
        if _Cuda.limit is not None and nbytes + 2**30 > _Cuda.limit:
            raise OutOfMemoryError(f"CUDA out of memory. Tried to allocate {(nbytes - _Cuda.held) / 2**30:.2f} GiB. "
                                   f"Of the allocated memory {_Cuda.held / 2**30:.2f} GiB is allocated by PyTorch, "
                                   f"and the process's limit is {_Cuda.limit / 2**30:.2f} GiB (the stand-in's cap)")
        _Cuda.peak = max(_Cuda.peak, nbytes)
        _publish()

    def alloc(self, nbytes):
        _Cuda.held += nbytes
        self.plant(_Cuda.held)

    def free(self, nbytes):
        _Cuda.held -= nbytes

    def spike(self, nbytes):
        self.plant(_Cuda.held + nbytes)

    def _lazy_call(self, fn, **kwargs):
        fn()  # initialised from the start, where a device is visible

    def make_sticky(self, message):
        _sticky["error"] = message


def _publish():
    """What NVML would list for this process now (its reserved memory and context), for tests/fake_pynvml.py."""
    _Cuda.reserved = max(_Cuda.reserved, _Cuda.peak + 2**30)
    folder = os.environ.get("FAKE_NVML_DIR")
    if folder:
        with open(os.path.join(folder, f"{os.getpid()}.tmp"), "w") as fh:
            fh.write(str(_Cuda.reserved + CONTEXT))
        os.replace(os.path.join(folder, f"{os.getpid()}.tmp"), os.path.join(folder, str(os.getpid())))


def _record_memory_history(enabled="all", **kwargs):
    recorder["on"] = enabled is not None
    recorder["calls"].append(enabled)


def _dump_snapshot(path):
    with open(path, "wb") as fh:
        pickle.dump({"segments": [], "device_traces": [], "recorded": list(recorder["calls"])}, fh)


cuda = _Cuda()
cuda.memory = types.SimpleNamespace(_record_memory_history=_record_memory_history, _dump_snapshot=_dump_snapshot)
