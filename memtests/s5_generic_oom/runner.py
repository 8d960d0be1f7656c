"""S5's runner: the generic "CUDA out of memory in large-model training" write-up, measured.

The write-up blames model size, batch size and data size, and offers pruning,
quantization and a smaller batch. The model here is a VGG-style conv net: its
conv activations grow with the batch (batch-size fixes can work) and its dense
fully connected head holds most of the weights (weight fixes can work).

How it honours the fixes scenarios.py lists (ctx.has):
  smaller_batch  half the batch, gradient accumulation 2 (same effective batch)
  amp            torch.autocast fp16 on CUDA. On CPU it is recorded as CUDA-only and not
                 applied, unless params["amp_on_cpu"]: bf16 autocast there measured ~10x
                 slower per step (no AVX-512 BF16) and a higher peak, so it says nothing
                 about the CUDA fix
  quantization   hidden Linear layers -> bitsandbytes Linear8bitLt (frozen int8);
                 without bitsandbytes, torch dynamic int8 (which silently stops gradients)
  pruning        prune.l1_unstructured(amount=0.2) on every Conv2d and Linear weight:
                 keeps weight_orig plus a dense mask, so the write-up's hope that
                 it lowers memory is what the measurement checks
  freeze_fp32    freeze the weights quantization makes int8, kept fp32: quantization
                 also freezes them (no gradients, no AdamW state), so this control
                 measures what freezing alone saves, apart from 8-bit storage

params["keep_hidden_mib"] (0 or absent: none) plants a leak for the growth
gate (memtests/test_s5_growth.py): each training forward keeps that many MiB
of its conv features, the dense head's input, as a loop that keeps each
step's features for a later look does. params["epoch_steps"] (absent: steps)
is the batches the data holds: a run of more steps goes round them again, as
epochs do, so a long run's data phase holds what a short one's does.
"""

from __future__ import annotations

import contextlib
import math

import torch
from torch import nn

from gpu_budget.estimate import batch_size

from .model import ConvNet, freeze_hidden, hidden_linears, prune_weights, tensor_bytes


def _quantize(model: ConvNet, device: str) -> dict:
    """Hidden Linear layers to 8-bit (the output layer stays fp32, as int8 recipes skip the head)."""
    head = model.classifier
    targets = hidden_linears(head)
    try:
        import bitsandbytes as bnb
    except ImportError:
        bnb = None
    if bnb is None:
        model.classifier = torch.ao.quantization.quantize_dynamic(head, {nn.Linear}, dtype=torch.qint8)
        return {"quantization": "torch dynamic int8 (bitsandbytes absent): inference-only, "
                                "gradients do not reach the layers below it"}
    for i in targets:
        old = head[i]
        new = bnb.nn.Linear8bitLt(old.in_features, old.out_features, has_fp16_weights=False, threshold=6.0)
        new.load_state_dict(old.state_dict())
        head[i] = new.to(device)  # moving the layer is what quantizes its weight to int8
    return {"quantization": f"bitsandbytes {bnb.__version__} Linear8bitLt, int8 weights frozen",
            "quantized_modules": [f"classifier.{i}" for i in targets]}


def _amp(ctx) -> str | None:
    """The autocast dtype the amp fix uses here, or None when it does not apply."""
    if not ctx.has("amp"):
        return None
    if ctx.device == "cuda":
        return "float16"
    return "bfloat16" if ctx.params.get("amp_on_cpu") else None


def keep_hidden_states(model: ConvNet, mib: float) -> list:
    """A planted leak: each training forward keeps `mib` MiB (float32, on the model's device) of its conv features.

    The features are repeated to the planted size, so every step keeps the same
    bytes; a forward outside training keeps nothing.
    """
    kept: list = []
    count = int(mib * 2**20) // 4

    def hook(module, inputs, output) -> None:
        if module.training:
            flat = output.detach().flatten()
            kept.append(flat.repeat(-(-count // flat.numel()))[:count].clone())

    model.features.register_forward_hook(hook)
    return kept


def run(ctx) -> dict:
    """load (build the net, apply weight fixes) -> data (uint8 images in memory) -> train steps."""
    p = ctx.params
    batch = batch_size(p, *((2, "smaller_batch") if ctx.has("smaller_batch") else ()))
    steps, image = p["steps"], p["image"]
    micro, accumulate = (batch // 2, 2) if ctx.has("smaller_batch") else (batch, 1)
    info: dict = {"batch_size": batch, "micro_batch": micro, "accumulation": accumulate, "image": image}

    ctx.meter.start("load")
    torch.manual_seed(p.get("seed", 0))
    model = ConvNet(p["width"], p["hidden"], p["classes"]).to(ctx.device)
    info["params"] = sum(t.numel() for t in model.parameters())
    if ctx.has("quantization"):
        info.update(_quantize(model, ctx.device))
    if ctx.has("pruning"):
        info.update(prune_weights(model))
    if ctx.has("freeze_fp32"):
        info.update(freeze_hidden(model))
    info["frozen_parameters"] = [n for n, t in model.named_parameters() if not t.requires_grad]
    info["quantized_linears"] = sum(isinstance(getattr(m, "weight", None), torch.Tensor) and m.weight.dtype == torch.int8
                                    for m in model.modules())
    trainable = [t for t in model.parameters() if t.requires_grad]
    info["trainable_params"] = sum(t.numel() for t in trainable)
    info["model_bytes"] = tensor_bytes(model)
    amp = _amp(ctx)
    info["amp"] = amp or ("CUDA-only: not applied on CPU (set amp_on_cpu to measure bf16)" if ctx.has("amp") else None)
    # what each requested fix amounted to here: FINDINGS.md gives a fix that was not applied no measured verdict
    info["fixes_applied"] = {name: "applied" for name in ctx.fixes}
    if ctx.has("amp") and not amp:
        info["fixes_applied"]["amp"] = "not applied: CUDA-only (autocast fp16); this step ran on the CPU"
    optimizer = torch.optim.AdamW(trainable, lr=1e-4)
    kept = keep_hidden_states(model, p["keep_hidden_mib"]) if p.get("keep_hidden_mib") else []

    ctx.meter.start("data")
    gen = torch.Generator().manual_seed(p.get("seed", 0))
    held = p.get("epoch_steps") or steps  # the batches made: a longer run goes round them again, as epochs do
    images = torch.randint(0, 256, (held * batch, 3, image, image), dtype=torch.uint8, generator=gen)
    labels = torch.randint(0, p["classes"], (held * batch,), generator=gen)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1) * 255

    model.train()
    losses = []
    for k in range(1, steps + 1):
        ctx.meter.start(f"train_step_{k}", step=k)
        for m in range(accumulate):
            lo = (k - 1) % held * batch + m * micro
            x = ((images[lo:lo + micro].float() - mean) / std).to(ctx.device)
            y = labels[lo:lo + micro].to(ctx.device)
            with torch.autocast(ctx.device, dtype=getattr(torch, amp)) if amp else contextlib.nullcontext():
                loss = nn.functional.cross_entropy(model(x), y) / accumulate
            loss.backward()
            losses.append(loss.item())
            del x, y, loss
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    ctx.meter.stop()
    info["loss_finite"] = all(map(math.isfinite, losses))
    if kept:
        info["kept_hidden_bytes"] = sum(t.numel() * t.element_size() for t in kept)
    return info
