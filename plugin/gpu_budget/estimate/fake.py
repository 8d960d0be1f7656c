"""Run real model code on fake tensors: shapes, dtypes and storages, no memory.

Under FakeTensorMode every op computes only its output's metadata, so a 7B
step costs seconds and no RAM. Real model code needs three things fake
tensors lack, supplied here:

- Values that decide control flow or shapes. Small tensors whose inputs are
  all known (token ids, masks, lengths, aranges, small random draws such as
  SpecAugment's mask widths, seeded) are also computed for real, on the
  side (small: KNOWN_LIMIT elements, or no larger than a known input, so a
  long batch's mask is read too; the batch is known at any size, built for
  real, within real_bound.REAL_LIMIT); `.item()`, `bool(t)` and masks then see their true values. A value
  derived from weights cannot be known: `.item()` on one raises
  EstimateError, and a boolean mask of unknown value is taken as all-True
  (the most memory it could select), which the result records.
- Module conversions: nn.Module._apply swaps fake parameters, which fails
  because the fake mode holds weakrefs to them; they are reassigned instead.
- Checkpoints: from_pretrained(a local folder) reads its safetensors files
  as fakes of their shapes and dtypes (checkpoint.py), nothing read.
- deepcopy (PEFT's modules_to_save copies): a fake copy is a new storage in
  the same fake mode, as the real copy would be.
- The real run's path through transformers: its is_tracing() takes a fake
  tensor for a traced one (utils/import_utils.is_fake_tensor) and then takes
  the tracer's path, e.g. an all-ones attention mask materialised as a 4D
  causal mask instead of SDPA's is_causal (masking_utils._ignore_causal_mask_sdpa),
  which also turns off SDPA's native GQA (integrations/sdpa_attention.use_gqa_in_sdpa).
  Inside the fake world that check answers False: the code reads the values
  it needs (KnownValues gives them, or the estimate says it cannot).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

import torch
from torch._ops import OpOverload
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensor,
    FakeTensorMode,
    unset_fake_temporarily,
)
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_unflatten
from torch.utils.weak import WeakIdKeyDictionary

from gpu_budget.estimate.checkpoint import fake_checkpoints, loading_here
from gpu_budget.estimate.errors import EstimateError, unknown_value

aten = torch.ops.aten
KNOWN_LIMIT = 1 << 22  # elements: tensors up to this size are also computed for real when their inputs are known
SMALL_DRAW = 4096  # elements: a random fill of a plain tensor this small is drawn for real (never a parameter)
_INDEX_OPS = {aten.index.Tensor, aten.index_put.default, aten.index_put_.default, aten._index_put_impl_.default}
_UNKNOWN = object()
# in-place ops that overwrite every element of their first argument: its old value does not matter
_OVERWRITES = {aten.uniform_.default, aten.normal_.default, aten.bernoulli_.float, aten.random_.default,
               getattr(aten.random_, "from"), aten.random_.to, aten.exponential_.default, aten.fill_.Scalar, aten.zero_.default}
_SCALAR_READS = {aten._local_scalar_dense.default, aten.item.default, aten.is_nonzero.default}
_UNKNOWABLE = {aten.empty.memory_format, aten.empty_like.default, aten.empty_strided.default, aten.new_empty.default,
               aten.new_empty_strided.default}


class KnownValues(TorchDispatchMode):
    """Carries the real values of small tensors whose inputs are known, and answers data-dependent ops."""

    def __init__(self, fake_mode: FakeTensorMode) -> None:
        super().__init__()
        self.fake_mode = fake_mode
        self.known: WeakIdKeyDictionary = WeakIdKeyDictionary()
        self._aliases: WeakIdKeyDictionary = WeakIdKeyDictionary()  # storage -> the known tensors viewing it
        self.assumed: dict[str, int] = {}  # data-dependent results the estimator had to assume, by op
        self.assumptions: dict[OpOverload, float] = {}  # op -> the value its (otherwise unknown) outputs are taken to hold

    def assume(self, op: OpOverload, value: float) -> None:
        """Take every unknown output of `op` to be filled with `value` (a builder's documented assumption)."""
        self.assumptions[op] = value

    def value(self, t):
        """The real value of a tensor argument, or None when it is not known."""
        if not isinstance(t, torch.Tensor):
            return t
        if not isinstance(t, FakeTensor):
            return t  # a real constant (e.g. a lookup table created outside the fake mode)
        return self.known.get(t)

    def remember(self, fake: torch.Tensor, real: torch.Tensor, limit: int | None = KNOWN_LIMIT) -> None:
        """Carry `real` as `fake`'s value where it has `limit` elements or fewer (None: any, a tensor the builder built
        for real: the batch, held in host RAM anyway)."""
        if isinstance(fake, FakeTensor) and isinstance(real, torch.Tensor) and (limit is None or real.numel() <= limit):
            self.known[fake] = real
            self._aliases.setdefault(fake.untyped_storage(), WeakIdKeyDictionary())[fake] = True

    def forget(self, fake: torch.Tensor) -> None:
        """`fake` was written with unknown data: it, and every known view of its storage, is unknown now."""
        for alias in list(self._aliases.get(fake.untyped_storage(), {}).keys()):
            self.known.pop(alias, None)
        self.known.pop(fake, None)

    def _real_args(self, args, kwargs, overwrites: bool = False):
        flat, spec = tree_flatten((args, kwargs))
        real = []
        for n, item in enumerate(flat):
            value = self.value(item)
            if value is None and n == 0 and overwrites and item.numel() <= SMALL_DRAW and not item.requires_grad \
                    and not isinstance(item, torch.nn.Parameter):
                with unset_fake_temporarily():
                    value = torch.empty(item.shape, dtype=item.dtype)
            if isinstance(item, torch.Tensor) and (value is None or value.numel() > KNOWN_LIMIT and item not in self.known):
                return None  # a known input of any size is read (the batch); the outputs are bounded by the caller
            real.append(value)
        return tree_unflatten(real, spec)

    def _run_real(self, func, args, kwargs):
        """The op on the known values (_UNKNOWN when an input is not known)."""
        real = self._real_args(args, kwargs, overwrites=func in _OVERWRITES)
        if real is None:
            return _UNKNOWN
        try:
            with unset_fake_temporarily():
                return func(*real[0], **real[1])
        except Exception:  # noqa: BLE001  the fake op is what counts; the side computation only adds values
            return _UNKNOWN

    def _bool_indices(self, func, args):
        """Boolean masks in an index op become long indices: exact when the mask is known, all-True if not."""
        indices = args[1]
        if not any(i is not None and i.dtype == torch.bool for i in indices):
            return args
        out = []
        for index in indices:
            if index is None or index.dtype != torch.bool:
                out.append(index)
                continue
            real = self.value(index)
            if real is not None:
                with unset_fake_temporarily():
                    where = real.nonzero().unbind(1)
                for w in where:
                    out.append(self.fake_mode.from_tensor(w))
                    self.remember(out[-1], w)
            else:
                self.assumed[str(func)] = self.assumed.get(str(func), 0) + 1
                out += [torch.zeros(index.numel(), dtype=torch.long, device=index.device)
                        for _ in range(index.dim())]
        return (args[0], out, *args[2:])

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _SCALAR_READS:
            real = self.value(args[0])
            if real is None:
                raise EstimateError(unknown_value())
            with unset_fake_temporarily():
                return func(real)
        if func in _INDEX_OPS:
            args = self._bool_indices(func, args)
        if func is aten._grouped_mm.default and args[0].dtype != torch.bfloat16:
            return _grouped_mm(*args, **kwargs)
        try:
            out = func(*args, **kwargs)
        except (DynamicOutputShapeException, DataDependentOutputException):
            real_out = self._run_real(func, args, kwargs)
            if real_out is not _UNKNOWN:
                flat, spec = tree_flatten(real_out)
                fake = [self.fake_mode.from_tensor(t) if isinstance(t, torch.Tensor) else t for t in flat]
                for f, r in zip(fake, flat):
                    self.remember(f, r)
                return tree_unflatten(fake, spec)
            if func is aten.nonzero.default:
                self.assumed[str(func)] = self.assumed.get(str(func), 0) + 1
                x = args[0]
                return torch.empty((x.numel(), x.dim()), dtype=torch.long, device=x.device)
            raise EstimateError(f"{func}: its output shape depends on tensor values the estimator cannot "
                                "know (computed from weights or random numbers)") from None
        self._propagate(func, args, kwargs, out)
        if func in self.assumptions and isinstance(out, torch.Tensor) and out not in self.known:
            with unset_fake_temporarily():
                self.remember(out, torch.full(out.shape, self.assumptions[func], dtype=out.dtype))
            self.assumed[str(func)] = self.assumed.get(str(func), 0) + 1
        return out

    def _propagate(self, func, args, kwargs, out) -> None:
        """Compute the op for real beside the fake one when every input is known and small."""
        outputs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        if not outputs and not func._schema.is_mutable:
            return
        read = [self.known[t].numel() for t in tree_flatten((args, kwargs))[0] if isinstance(t, FakeTensor) and t in self.known]
        limit = max([KNOWN_LIMIT, *read])  # up to a known input's own size: a batch's mask, however long the batch
        if any(t.numel() > limit for t in outputs) or func in _UNKNOWABLE:
            self._forget_written(func, args)
            return
        real_out = self._run_real(func, args, kwargs)  # in-place ops update the known values themselves
        if real_out is _UNKNOWN:
            self._forget_written(func, args)
            return
        for fake, real in zip(tree_flatten(out)[0], tree_flatten(real_out)[0]):
            self.remember(fake, real, limit)
        if func in _OVERWRITES and isinstance(args[0], FakeTensor) and isinstance(real_out, torch.Tensor):
            self.remember(args[0], real_out)

    def _forget_written(self, func, args) -> None:
        """An op that writes into a known tensor with unknown data makes its value unknown."""
        for arg, spec in zip(args, func._schema.arguments):
            if spec.alias_info is not None and spec.alias_info.is_write:
                for tensor in tree_flatten(arg)[0]:
                    if isinstance(tensor, FakeTensor):
                        self.forget(tensor)


def _grouped_mm(mat_a, mat_b, offs=None, bias=None, out_dtype=None):
    """torch's fake kernel of _grouped_mm (transformers' MoE experts) holds CUDA's bf16-only check, where the CPU
    kernel takes every float dtype: the output its meta function makes, without the check. The output's values are
    never known (they come from weights)."""
    from torch._meta_registrations import _create_grouped_mm_output_tensor

    out = _create_grouped_mm_output_tensor(mat_a, mat_b, offs, out_dtype)
    return out if bias is None else out.add_(bias)


class FakeDeepcopy(TorchFunctionMode):
    """copy.deepcopy of a fake tensor: a clone in the same fake mode (a new storage, as for real)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.__deepcopy__ and isinstance(args[0], FakeTensor):
            tensor, memo = args
            if id(tensor) not in memo:
                with torch.no_grad():
                    copy = tensor.clone()
                if isinstance(tensor, torch.nn.Parameter):
                    copy = torch.nn.Parameter(copy, requires_grad=tensor.requires_grad)
                else:
                    copy.requires_grad_(tensor.requires_grad)
                memo[id(tensor)] = copy
            return memo[id(tensor)]
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def _reassign_instead_of_swap() -> Iterator[None]:
    """nn.Module._apply swaps fake parameters (and fails on the fake mode's weakrefs): reassign .data instead."""
    original = torch.utils.swap_tensors

    def swap(t1, t2):
        try:
            return original(t1, t2)
        except RuntimeError:
            if not isinstance(t1, FakeTensor):
                raise
            t1.data = t2.data if isinstance(t2, torch.nn.Parameter) else t2

    torch.utils.swap_tensors = swap
    try:
        yield
    finally:
        torch.utils.swap_tensors = original


@contextlib.contextmanager
def values_not_traced() -> Iterator[None]:
    """transformers' is_tracing(tensor) does not count a fake tensor as traced: the model takes the real run's path.

    Only where transformers is imported already (not imported for a model without it): step.py enters this
    around the steps, after the builder has imported its model classes.
    """
    utils = sys.modules.get("transformers.utils.import_utils")
    original = getattr(utils, "is_fake_tensor", None)
    if original is None:
        yield
        return
    utils.is_fake_tensor = lambda x: False
    try:
        yield
    finally:
        utils.is_fake_tensor = original


class _NoCudaFakeMode(FakeTensorMode):
    """FakeTensorMode that never asks torch.cuda whether a GPU is there.

    Its avoid_device_init calls torch.cuda.is_available() on entry and on every op, which on a CUDA build
    initialises the driver in the estimating process (the CLI's, an exploration's pytest process). The fakes here
    are CPU tensors only, so the answer a GPU host gives (False: no device-move workarounds) is the one to take.
    """

    @property
    def avoid_device_init(self) -> bool:
        return False


@contextlib.contextmanager
def fake_world() -> Iterator[KnownValues]:
    """Everything created inside is fake (device cpu); yields the KnownValues mode (its `assumed` counts)."""
    fake_mode = _NoCudaFakeMode(allow_non_fake_inputs=True)
    known = KnownValues(fake_mode)
    with torch.random.fork_rng(devices=[]), _reassign_instead_of_swap(), values_not_traced(), \
            loading_here(), fake_checkpoints(), fake_mode, known, FakeDeepcopy():
        torch.manual_seed(0)  # small random draws on known inputs are made for real: the same ones every time
        yield known


@contextlib.contextmanager
def outside() -> Iterator[None]:
    """A context where no mode is active (no fake tensors, nothing counted): for real side data, each tensor of
    it bounded (real_bound.py: a batch of a huge configuration is refused by name, never made in this process)."""
    from torch.utils._python_dispatch import _disable_current_modes

    from gpu_budget.estimate.real_bound import BoundedReal

    with _disable_current_modes(), BoundedReal():
        yield


def known_tensor(known: KnownValues | None, real: torch.Tensor) -> torch.Tensor:
    """A fake tensor standing for `real` whose value the estimator knows (token ids, masks, lengths).

    Without a fake world (known is None: a real reference run) the real tensor itself.
    """
    if known is None:
        return real
    fake = known.fake_mode.from_tensor(real)
    known.remember(fake, real, limit=None)
    return fake


def known_batch(known: KnownValues | None, make: Callable[[], dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """make() builds a batch of real tensors outside the fake world; they come back as fakes with known values.
    Bounded (real_bound.py): each tensor before it is made, the batch's together once made."""
    from gpu_budget.estimate.real_bound import check_batch

    with outside():
        real = make()
    check_batch(real)
    return {k: known_tensor(known, v) for k, v in real.items()}
