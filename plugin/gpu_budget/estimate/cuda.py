"""CUDA mode: the known differences between a CPU step and the same step on a GPU, as adjustments.

Fake *cuda* tensors do not work on a CPU-only torch build (MEASURED.md), so the
estimator runs fake CPU tensors and changes what differs on CUDA:

  adamw_foreach   torch.optim.AdamW defaults to foreach on CUDA (a list of
                  temporaries at once) and to a per-parameter loop on CPU.
                  Builders pass `foreach=True` in CUDA mode (estimate.adamw).
  dropout_mask    CPU dropout keeps a float mask (input dtype) for backward; CUDA
                  runs the fused native_dropout, which keeps a bool mask (1 byte).
  sdpa_kernel     CPU SDPA falls back to the math path when attention dropout
                  is on (it keeps the B x H x L x S weights); CUDA picks the
                  flash / memory-efficient kernel, which keeps the output and a
                  logsumexp. GQA without a mask (enable_gqa, transformers' path
                  when no token is masked) runs on the flash kernel, which reads
                  the key/value heads in place (sdp_utils.cpp: flash supports
                  grouped-query attention, memory-efficient does not): it keeps
                  the unexpanded key and value; its backward computes the key and
                  value gradients at the query's head count and sums them
                  (flash_api.cpp mha_bwd's dk_expanded / dv_expanded). GQA with a
                  mask is expanded (a copy; conservative). A mask that needs a
                  gradient (a learned position bias: T5's) runs on the
                  memory-efficient kernel, which writes the bias gradient at
                  B x H x L x S (attention_backward.cu; flash takes no mask).
  rounding_512    the caching allocator rounds every block up to 512 bytes.
  cublas_workspace  torch gives each thread that runs a matmul a cuBLAS workspace
                  from the caching allocator (so max_memory_allocated counts it):
                  32 MiB on compute capability 9.x and later (H100, H200,
                  Blackwell), 8 MiB + 128 KiB before (CublasHandlePool.cpp);
                  CUBLAS_WORKSPACE_CONFIG changes it. A step has two such threads
                  (the forward's and autograd's backward thread): tracker.py.
  autocast        a run's torch.autocast("cuda") (a Trainer's fp16): CUDA's cast
                  policies, not CPU autocast's (autocast.py)
  allocator       the caching allocator's rounding, segments and splitting turn the
                  log into allocated and reserved peaks (allocator.py)
  cuda_context    the CUDA context is not a tensor: a parameter (bytes) the user
                  measures on their GPU; added only to the device-level figure.
  bnb kernels     4-bit matmuls dequantize the weight (bitsandbytes' fallback
                  path on CUDA and its only path on CPU); 8-bit training uses
                  int8 matmuls on CUDA and dequantize + fp matmul on CPU
                  (quant.py models both).

Nothing here makes the result a GPU measurement: it is an *estimate* of
torch.cuda.max_memory_allocated() for the step, reported under its own metric.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F

CUDA_GRANULE = 512  # c10/cuda/CUDACachingAllocator.cpp kMinBlockSize
CUBLAS_WORKSPACE = 33_554_432  # 32 MiB: torch's default per thread on compute capability >= 9 (CublasHandlePool.cpp)


@dataclass(frozen=True)
class Device:
    """Which device's behaviour to model. cuda_context: bytes, measured by the user on their GPU (None: left out).

    cublas_workspace: bytes per matmul thread (None: torch's default on compute capability 9 and later).
    """

    cuda: bool = False
    cuda_context: int | None = None
    cublas_workspace: int | None = None

    @property
    def granule(self) -> int:
        return CUDA_GRANULE if self.cuda else 1

    @property
    def workspace(self) -> int:
        """Bytes of one cuBLAS workspace in this mode (none on a CPU)."""
        if not self.cuda:
            return 0
        return CUBLAS_WORKSPACE if self.cublas_workspace is None else self.cublas_workspace

    @property
    def name(self) -> str:
        return "cuda (modelled)" if self.cuda else "cpu"


def _dropout(original):
    def dropout(input, p=0.5, training=True, inplace=False):
        if training and 0.0 < p < 1.0 and not inplace and input.numel() > 0:
            return torch.native_dropout(input, p, True)[0]  # what CUDA's fused kernel keeps: a bool mask
        return original(input, p, training, inplace)

    return dropout


class _FlashGqa(torch.autograd.Function):
    """CUDA's flash kernel on grouped-query attention: what it keeps and allocates (fake tensors: no values)."""

    @staticmethod
    def forward(ctx, query, key, value):
        b, h, length, d = query.shape
        out = query.new_empty((b, length, h, d)).transpose(1, 2)  # the kernel writes B x L x H x D
        logsumexp = query.new_empty((b, h, length), dtype=torch.float32)
        ctx.save_for_backward(query, key, value, out, logsumexp)
        return out

    @staticmethod
    def backward(ctx, grad):
        query, key, value, _, _ = ctx.saved_tensors
        b, h, _, d = query.shape
        heads_k, length_k = key.shape[1], key.shape[2]
        grad_query = torch.empty_like(query)
        grads = []
        for kept in (key, value):  # computed at the query's head count, then summed over each group
            expanded = kept.new_empty((b, length_k, h, d)).transpose(1, 2)
            grads.append(expanded.unflatten(1, (heads_k, h // heads_k)).sum(2))
            del expanded
        return grad_query, grads[0], grads[1]


class _EfficientBias(torch.autograd.Function):
    """CUDA's memory-efficient kernel on a bias that needs a gradient: CPU's flash op refuses one; CUDA keeps output +
    logsumexp and, in backward, writes the bias gradient at the expanded bias's shape, last dim aligned to 16."""

    @staticmethod
    def forward(ctx, query, key, value, bias, dropout_p, scale):
        out, logsumexp = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            query, key, value, dropout_p, False, attn_mask=bias, scale=scale)[:2]
        ctx.save_for_backward(query, key, value, bias, out, logsumexp)
        return out

    @staticmethod
    def backward(ctx, grad):
        query, key, value, bias, _, _ = ctx.saved_tensors
        last = bias.shape[-1]
        grad_bias = bias.new_empty((*bias.shape[:-1], -(-last // 16) * 16))[..., :last]
        return torch.empty_like(query), torch.empty_like(key), torch.empty_like(value), grad_bias, None, None


def _sdpa(original):
    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        if query.dim() != 4 or query.requires_grad is False and key.requires_grad is False:
            return original(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                            scale=scale, enable_gqa=enable_gqa)
        if enable_gqa and key.shape[1] != query.shape[1] and attn_mask is None:
            return _FlashGqa.apply(query, key, value)
        if enable_gqa and key.shape[1] != query.shape[1]:
            repeat = query.shape[1] // key.shape[1]
            key, value = key.repeat_interleave(repeat, dim=1), value.repeat_interleave(repeat, dim=1)
        if attn_mask is not None and attn_mask.dtype == torch.bool:
            attn_mask = torch.zeros_like(attn_mask, dtype=query.dtype).masked_fill_(~attn_mask, float("-inf"))
        if attn_mask is not None and attn_mask.requires_grad:
            shape = (*query.shape[:3], key.shape[2])
            return _EfficientBias.apply(query, key, value, attn_mask.expand(shape), dropout_p, scale)
        # the CPU flash kernel keeps what CUDA's flash / memory-efficient kernels keep: output + logsumexp
        out, _ = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            query, key, value, dropout_p, is_causal, attn_mask=attn_mask, scale=scale)
        return out

    return sdpa


@contextlib.contextmanager
def modelled(device: Device) -> Iterator[None]:
    """Inside: dropout and SDPA behave (memory-wise) as on `device`. Nothing changes for CPU."""
    if not device.cuda:
        yield
        return
    saved = F.dropout, F.scaled_dot_product_attention
    F.dropout, F.scaled_dot_product_attention = _dropout(saved[0]), _sdpa(saved[1])
    try:
        yield
    finally:
        F.dropout, F.scaled_dot_product_attention = saved
