"""A bound on the real tensors an estimate builds in its own process: a batch's token ids, masks, lengths.

The estimator reads those values (fake.py: known values), so a builder makes
the batch for real, outside the fake world, in the process that estimates: the
pytest process of an exploration, whose first example is the envelope's top
corner. A knob such as `seq=(1, 10**9)` there would fill GiBs of host RAM, and
the process that died would be pytest's own. Each tensor made for real outside
the fake world is sized on the meta device first and refused, naming its op,
shape and size, before it is made where it would pass REAL_LIMIT; a batch whose
tensors together pass it is refused as well (known_batch), naming each.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from gpu_budget.estimate.errors import EstimateError
from gpu_budget.units import format_size

REAL_LIMIT = 512 << 20  # bytes: one tensor, or one batch, the estimator builds for real in its own process
WHERE = "gpu_budget.estimate.real_bound.REAL_LIMIT"


class BoundedReal(TorchDispatchMode):
    """Refuses a tensor made for real that would pass `limit` bytes, before it is made (sized on the meta device)."""

    def __init__(self, limit: int | None = None) -> None:
        super().__init__()
        self.limit = REAL_LIMIT if limit is None else limit

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        made = _meta_outputs(func, args, kwargs)
        for tensor in made or ():
            self.check(tensor, str(func))
        out = func(*args, **kwargs)
        if made is None:  # no meta kernel: sized once made (a factory op always has one)
            for tensor in _new_outputs(func, out):
                self.check(tensor, str(func))
        return out

    def check(self, tensor: torch.Tensor, made_by: str) -> None:
        size = tensor.numel() * tensor.element_size()
        if size > self.limit:
            raise EstimateError(f"this configuration would make a {format_size(size)} tensor for real in the "
                                f"estimating process ({made_by}, shape {tuple(tensor.shape)}, {tensor.dtype}), over "
                                f"the {format_size(self.limit)} the estimator builds for real ({WHERE}: a batch's "
                                "ids and masks, whose values it reads): narrow the knobs that size the batch, or "
                                "raise the limit where the host has the memory")


def check_batch(batch: Mapping[str, object], limit: int | None = None) -> None:
    """A batch whose real tensors together pass the limit, refused naming each (each alone passed it)."""
    limit = REAL_LIMIT if limit is None else limit
    sizes = {k: v.numel() * v.element_size() for k, v in batch.items() if isinstance(v, torch.Tensor)}
    if sum(sizes.values()) > limit:
        each = ", ".join(f"{k} {format_size(n)}" for k, n in sizes.items())
        raise EstimateError(f"this configuration's batch holds {format_size(sum(sizes.values()))} of real tensors in "
                            f"the estimating process ({each}), over the {format_size(limit)} the estimator builds for "
                            f"real ({WHERE}): narrow the knobs that size the batch, or raise the limit where the host "
                            "has the memory")


def _meta_outputs(func, args, kwargs) -> list[torch.Tensor] | None:
    """The op's new (non-aliasing) outputs, made on the meta device (no memory); None where it has no meta kernel."""
    def meta(x):
        if isinstance(x, torch.Tensor):
            return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
        if isinstance(x, torch.Generator):
            return None  # the draw's values do not size it
        return torch.device("meta") if isinstance(x, torch.device) else x

    margs, mkwargs = tree_map(meta, (args, kwargs))
    if any(a.name == "device" and a.kwarg_only for a in func._schema.arguments):
        mkwargs["device"] = torch.device("meta")
    try:
        out = func(*margs, **mkwargs)
    except Exception:  # noqa: BLE001  no meta kernel, or one that reads values (.item()): sized once made
        return None
    return _new_outputs(func, out)


def _new_outputs(func, out) -> list[torch.Tensor]:
    """The tensors among the op's outputs that are new storage: not a view or an in-place write of an input."""
    if any(r.alias_info is not None for r in func._schema.returns):
        return []
    return [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
