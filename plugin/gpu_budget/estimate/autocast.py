"""CUDA's autocast, modelled on fake CPU tensors: which ops run in fp16 and which in fp32, and the weight casts kept.

CPU autocast casts different ops than CUDA's (layer_norm, softmax, exp or sum keep the
input's dtype there; CUDA runs them in fp32), so the estimator does not borrow it. This
TorchFunctionMode applies CUDA's cast policies (aten/src/ATen/autocast_mode.h, the
AT_FORALL_* lists) above autograd, where autocast itself sits, so autograd saves what it
saves on a GPU: the fp16 copy a matmul reads, the fp32 copy a layer norm reads.

  lower precision   matmuls, linear, convolutions, SDPA: floating inputs cast to the
                    autocast dtype. An fp32 leaf that requires grad (a weight) is cast
                    once per autocast region and the copy kept until the region ends,
                    as autocast's cast cache does.
  fp32              pointwise transcendentals, norms, losses: inputs cast to fp32.
  fp32 output       softmax, log_softmax, sum, cumsum, prod: computed with dtype=fp32.
  promote           anything else runs in its inputs' dtype (type promotion), as here.

Ops are matched by name, so `torch.matmul`, `Tensor.matmul` and `@` are one entry.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_map

LOWER_PRECISION = frozenset({
    "linear", "matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "baddbmm", "addbmm", "addmm", "addmv", "addr", "mv",
    "einsum", "chain_matmul", "multi_dot", "vecdot", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "conv_tbc", "prelu", "scaled_dot_product_attention", "lstm_cell",
    "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
})
FP32 = frozenset({
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt", "sinh",
    "tan", "pow", "__pow__", "__rpow__", "softplus", "layer_norm", "group_norm", "cosine_similarity",
    "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss", "kl_div", "l1_loss",
    "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss",
    "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist",
    "renorm", "logsumexp", "cross_entropy",  # cross_entropy: log_softmax (fp32 output) then nll_loss (fp32) on CUDA
})
FP32_OUTPUT = frozenset({"softmax", "log_softmax", "sum", "cumsum", "cumprod", "prod", "vector_norm", "matrix_norm"})
CAST_FROM = (torch.float32, torch.float16, torch.bfloat16)  # doubles and integers are never cast


class CudaAutocast(TorchFunctionMode):
    """Inside: torch.autocast("cuda", dtype) as it casts, on whatever tensors run here."""

    def __init__(self, dtype: torch.dtype = torch.float16) -> None:
        super().__init__()
        self.dtype = dtype
        self._cache: dict[int, torch.Tensor] = {}  # id(weight) -> its cast copy, for this region

    def __exit__(self, *exc):
        self._cache.clear()  # autocast clears its cast cache when the outermost region exits
        return super().__exit__(*exc)

    def _cast(self, value, dtype: torch.dtype):
        if not isinstance(value, torch.Tensor) or value.dtype not in CAST_FROM or value.dtype == dtype:
            return value
        cacheable = dtype == self.dtype and value.dtype == torch.float32 and value.requires_grad and value.is_leaf
        if not cacheable:
            return value.to(dtype)
        key = id(value)
        if key not in self._cache:
            self._cache[key] = value.to(dtype)
        return self._cache[key]

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        if "out" not in kwargs:
            if name in LOWER_PRECISION:
                args, kwargs = tree_map(lambda v: self._cast(v, self.dtype), (args, kwargs))
            elif name in FP32:
                args, kwargs = tree_map(lambda v: self._cast(v, torch.float32), (args, kwargs))
            elif name in FP32_OUTPUT and kwargs.get("dtype") is None and _floating_first(args):
                kwargs["dtype"] = torch.float32
        return func(*args, **kwargs)


def _floating_first(args) -> bool:
    first = next((a for a in args if isinstance(a, torch.Tensor)), None)
    return first is not None and first.dtype in CAST_FROM


def backward(loss: torch.Tensor, dtype: torch.dtype) -> None:
    """loss.backward() with CUDA's autocast modelled for the Python that backward runs: a checkpoint's recompute
    and a custom Function's backward run in the forward's autocast state, as torch.utils.checkpoint and
    custom_bwd restore it (autograd's own kernels run no Python). It calls the engine as torch.autograd.backward
    does, below its torch-function dispatch: a mode's handler runs with the mode set aside, which would leave the
    recompute uncast."""
    from torch.autograd import _make_grads
    from torch.autograd.graph import _engine_run_backward

    with CudaAutocast(dtype):
        grads = _make_grads((loss,), (None,), is_grads_batched=False)
        _engine_run_backward((loss,), grads, False, False, (), allow_unreachable=True, accumulate_grad=True)
