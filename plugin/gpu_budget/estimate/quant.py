"""bitsandbytes 4-bit / 8-bit layers for the estimator, with their bytes modelled explicitly.

bitsandbytes' Params4bit / Int8Params cannot wrap a fake tensor (a tensor
subclass of a tensor subclass), and its custom ops' fake kernels hide the
workspaces the real kernels allocate. So the estimator swaps the same
nn.Linear layers that transformers' quantizer would swap (its own
`get_modules_to_not_convert` / `should_convert_module`) for these stand-ins,
which hold what bitsandbytes 0.50 holds and allocate what it allocates:

  4-bit nf4 (Linear4bit, blocksize 64, no double quant: transformers' defaults)
    weight: ceil(N*K/2) uint8 + N*K/64 float32 absmax
    forward: dequantize to an N x K compute-dtype temporary, linear, free it
             (gemm_4bit's CPU path, and its CUDA fallback past 1536 rows)
    backward: dequantize again for grad_input (MatMul4Bit.backward)
  8-bit (Linear8bitLt, has_fp16_weights=False)
    weight: N*K int8 + N float32 row scales (SCB)
    CPU training (MatMul8bitFp): dequantize to N x K in the input dtype,
             linear; keeps the input; backward dequantizes again
    CUDA (MatMul8bitLt): the input cast to fp16 and quantized to int8 (M x K),
             an int32 M x N accumulator, the output; keeps the input;
             backward dequantizes the weight. Outlier columns are assumed
             to be none (their count depends on activation values).

The layers are frozen, as bitsandbytes' are; LoRA goes on top of them
(they subclass nn.Linear, so PEFT wraps them with its plain Linear adapter:
PEFT's 4-bit adapter also clones the base output, one transient activation
per LoRA layer that this leaves out).
"""

from __future__ import annotations

import torch
from torch import nn

BLOCKSIZE_4BIT = 64


class _Dequant4bitLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, packed, shape, bias):
        weight = torch.empty(shape, dtype=x.dtype, device=x.device)  # dequantize_4bit's output
        out = nn.functional.linear(x, weight, bias)
        del weight
        ctx.shape, ctx.dtype = shape, x.dtype
        ctx.save_for_backward(packed)
        return out

    @staticmethod
    def backward(ctx, grad):
        weight = torch.empty(ctx.shape, dtype=ctx.dtype, device=grad.device)
        return grad @ weight, None, None, None


class _Int8Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, scales, bias, cuda):
        n, k = weight.shape
        if cuda:  # MatMul8bitLt: fp16 copy, int8 + row stats, int32 accumulator, then the output
            half = x.to(torch.float16)
            quantized = torch.empty(half.shape, dtype=torch.int8, device=x.device)
            row_stats = torch.empty(half.numel() // k, dtype=torch.float32, device=x.device)
            accumulator = torch.empty((*x.shape[:-1], n), dtype=torch.int32, device=x.device)
            out = torch.empty((*x.shape[:-1], n), dtype=x.dtype, device=x.device)
            del half, quantized, row_stats, accumulator
        else:  # MatMul8bitFp: dequantize the weight, plain linear
            dequantized = weight.to(x.dtype).mul_(scales.unsqueeze(1).mul(1.0 / 127.0))
            out = nn.functional.linear(x, dequantized)
            del dequantized
        if bias is not None:
            out = out + bias
        ctx.kept_input = x  # both keep A as a plain attribute until backward
        ctx.weight_shape, ctx.dtype = weight.shape, x.dtype
        return out

    @staticmethod
    def backward(ctx, grad):
        weight = torch.empty(ctx.weight_shape, dtype=ctx.dtype, device=grad.device)
        grad_input = grad.to(ctx.dtype) @ weight
        ctx.kept_input = None
        return grad_input, None, None, None, None


class Linear4bit(nn.Linear):
    """A frozen nf4 layer: packed weight + absmax, dequantized per matmul."""

    def __init__(self, linear: nn.Linear, compute_dtype: torch.dtype) -> None:
        nn.Module.__init__(self)
        self.in_features, self.out_features = linear.in_features, linear.out_features
        numel = self.in_features * self.out_features
        device = linear.weight.device
        self.weight = nn.Parameter(torch.empty((numel + 1) // 2, 1, dtype=torch.uint8, device=device),
                                   requires_grad=False)
        self.register_buffer("absmax", torch.empty(-(-numel // BLOCKSIZE_4BIT), dtype=torch.float32, device=device))
        self.bias = linear.bias
        if self.bias is not None:
            self.bias.requires_grad_(False)
        self.compute_dtype = compute_dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        bias = None if self.bias is None else self.bias.to(self.compute_dtype)
        out = _Dequant4bitLinear.apply(x.to(self.compute_dtype), self.weight, (self.out_features, self.in_features),
                                       bias)
        return out.to(dtype)


class Linear8bit(nn.Linear):
    """A frozen LLM.int8 layer: int8 weight + per-row scales."""

    def __init__(self, linear: nn.Linear, cuda: bool) -> None:
        nn.Module.__init__(self)
        self.in_features, self.out_features = linear.in_features, linear.out_features
        device = linear.weight.device
        self.weight = nn.Parameter(torch.empty(self.out_features, self.in_features, dtype=torch.int8, device=device),
                                   requires_grad=False)
        self.register_buffer("scales", torch.empty(self.out_features, dtype=torch.float32, device=device))
        self.bias = linear.bias
        if self.bias is not None:
            self.bias.requires_grad_(False)
        self.cuda_kernels = cuda

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bias = None if self.bias is None else self.bias.to(x.dtype)
        return _Int8Linear.apply(x, self.weight, self.scales, bias, self.cuda_kernels)


def quantize(model: nn.Module, bits: int, compute_dtype: torch.dtype, cuda: bool = False,
             skip_modules: list[str] | None = None) -> list[str]:
    """Swap the nn.Linear layers transformers' bitsandbytes quantizer would swap; returns their names.

    skip_modules: BitsAndBytesConfig.llm_int8_skip_modules (None: transformers'
    default skips, e.g. lm_head).
    """
    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, got {bits}")
    from transformers.quantizers.base import HfQuantizer
    from transformers.quantizers.quantizers_utils import should_convert_module

    skip = HfQuantizer.get_modules_to_not_convert(model, skip_modules, getattr(model, "_keep_in_fp32_modules", None))
    swapped = []
    for name, module in list(model.named_modules()):
        if type(module) is nn.Linear and should_convert_module(name, skip):
            new = Linear4bit(module, compute_dtype) if bits == 4 else Linear8bit(module, cuda)
            model.set_submodule(name, new)
            swapped.append(name)
    for flag, value in (("is_loaded_in_4bit", bits == 4), ("is_loaded_in_8bit", bits == 8), ("is_quantized", True)):
        setattr(model, flag, value)
    return swapped


def quantized_bytes(numel: int, bits: int, rows: int) -> int:
    """Bytes one quantized weight holds (for checks and the docs)."""
    if bits == 4:
        return (numel + 1) // 2 + 4 * -(-numel // BLOCKSIZE_4BIT)
    return numel + 4 * rows
