"""from_pretrained(a local folder) in the fake world: the checkpoint's tensors read as fakes of their shapes.

A runner loads its model with from_pretrained from a saved folder, and its
builder should too. transformers reads safetensors files through safe_open
and materialises each tensor in worker threads, which the fake mode (a
per-thread mode) does not reach: the loaded weights came back as real
tensors, allocated for real (a 7B model's full size) and mixed with fakes.
Inside the fake world safe_open is stood in for: its names, shapes and dtypes
are the file's, each tensor a fake (nothing read), so the rest of the real
loading path (dtype, tied and mismatched weights, missing keys) runs as it
would, on fakes. A build loads on its own thread (`loading_here`, fake or
real: a fake mode and the tracker are per thread, and a fake mode is not
safe across threads), so a real reference run counts its loading as the
fake one does. A checkpoint read another way (a .bin file, a state_dict passed in)
still loads real tensors: `check_fake` refuses a plan that holds one. A load
that wraps the fakes in a tensor subclass (bitsandbytes' quantized weights,
from quantization_config) cannot run on them: `wrapping_refused` says so.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator

import torch
from torch._subclasses.fake_tensor import FakeTensor

from gpu_budget.estimate.errors import EstimateError

SYNC_LOAD = "HF_DEACTIVATE_ASYNC_LOAD"  # transformers materialises checkpoint tensors in worker threads unless set
MODELING_UTILS = "transformers.modeling_utils"  # the module whose safe_open from_pretrained calls

_DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
           "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
           "BOOL": torch.bool, "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2}


class _FakeSlice:
    """A safetensors slice whose reads are fakes of its shape and dtype (made in the fake world, on its thread)."""

    def __init__(self, real) -> None:
        self._real = real

    def get_shape(self) -> list[int]:
        return self._real.get_shape()

    def get_dtype(self) -> str:
        return self._real.get_dtype()

    def __getitem__(self, index) -> torch.Tensor:
        name = self._real.get_dtype()
        if name not in _DTYPES:
            raise EstimateError(f"a checkpoint tensor of safetensors dtype {name}: the estimator has no fake for it")
        return torch.empty(self._real.get_shape(), dtype=_DTYPES[name])[index]


class _FakeFile:
    """safe_open's stand-in: the real file's index (keys, metadata), every tensor read as a fake."""

    def __init__(self, real) -> None:
        self._real = real

    def __enter__(self):  # the file itself, as safe_open gives it
        return self

    def __exit__(self, *exc) -> None:
        self._real.__exit__(*exc)

    def keys(self) -> list[str]:
        return self._real.keys()

    def metadata(self):
        return self._real.metadata()

    def get_slice(self, name: str) -> _FakeSlice:
        return _FakeSlice(self._real.get_slice(name))

    def get_tensor(self, name: str) -> torch.Tensor:
        return self.get_slice(name)[...]


@contextlib.contextmanager
def loading_here() -> Iterator[None]:
    """Within: transformers materialises a checkpoint's tensors on the calling thread, not in worker threads."""
    was = os.environ.get(SYNC_LOAD)
    os.environ[SYNC_LOAD] = "1"
    try:
        yield
    finally:
        if was is None:
            os.environ.pop(SYNC_LOAD, None)
        else:
            os.environ[SYNC_LOAD] = was


@contextlib.contextmanager
def fake_checkpoints() -> Iterator[None]:
    """Within: safe_open, as safetensors and transformers' modeling_utils name it, opens a file of fakes."""
    import safetensors

    original = safetensors.safe_open

    def safe_open(*args, **kwargs):
        return _FakeFile(original(*args, **kwargs))

    def owners():  # transformers imported inside binds the stand-in too: it is taken back from there as well
        return [m for m in (safetensors, sys.modules.get(MODELING_UTILS)) if m is not None]

    for owner in owners():
        if getattr(owner, "safe_open", None) is original:
            owner.safe_open = safe_open
    try:
        yield
    finally:
        for owner in owners():
            if getattr(owner, "safe_open", None) is safe_open:
                owner.safe_open = original


def check_fake(model: torch.nn.Module) -> None:
    """Refuse a model holding real or meta tensors in the fake world: its estimate would allocate or miss them."""
    tensors = list(model.named_parameters(remove_duplicate=False)) + list(model.named_buffers(remove_duplicate=False))
    real = [name for name, t in tensors if not isinstance(t, FakeTensor) or t.device.type == "meta"]
    if real:
        shown = ", ".join(real[:3]) + (f" and {len(real) - 3} more" if len(real) > 3 else "")
        raise EstimateError(
            f"the builder's model holds {len(real)} real tensor{'s' * (len(real) != 1)} ({shown}): loaded or made "
            "outside the fake world (a .bin checkpoint, a state_dict or tensors passed in, a meta tensor left "
            "unloaded), they are allocated for real and not estimated as the run holds them; load a safetensors "
            "folder with from_pretrained, or build from the config (_from_config)")


_WRAPPED = re.compile(r"Creating a new Tensor subclass (\w+) but the raw Tensor object is already associated to a "
                      r"python object of type FakeTensor")
_BITSANDBYTES = ("Int8Params", "Params4bit")


@contextlib.contextmanager
def wrapping_refused() -> Iterator[None]:
    """Within: a tensor subclass made of a fake (bitsandbytes' weights, under from_pretrained's quantization_config) is
    an EstimateError saying why and what to do instead, not torch's bare RuntimeError naming neither."""
    try:
        yield
    except RuntimeError as exc:
        found = None if isinstance(exc, EstimateError) else _WRAPPED.search(str(exc))
        if found is None:
            raise
        name = found.group(1)
        if name in _BITSANDBYTES:
            raise EstimateError(
                f"bitsandbytes' {name} cannot wrap a fake tensor: quantization_config is not followed on fakes; load the "
                "weights without it and swap the layers with gpu_budget.estimate.quant.quantize(model, bits, dtype), "
                "which models what bitsandbytes holds, as the case studies' builders do") from exc
        raise EstimateError(f"{name}, a tensor subclass, cannot wrap a fake tensor: the estimator cannot follow code "
                            "that makes one of a weight; build the model without it") from exc
