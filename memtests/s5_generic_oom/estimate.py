"""S5's estimator builder: the runner's net (model.py) on fake tensors, its weight fixes applied the same way."""

from __future__ import annotations

import torch
from torch import nn

from gpu_budget.estimate import StepPlan, adamw, batch_size
from gpu_budget.estimate.fake import known_batch
from gpu_budget.estimate.quant import Linear8bit

from .model import ConvNet, freeze_hidden, hidden_linears, prune_weights


def build(p: dict, fixes: tuple[str, ...], device, known) -> StepPlan:
    has = fixes.__contains__
    model = ConvNet(p["width"], p["hidden"], p["classes"])
    notes = []
    if has("quantization"):
        head = model.classifier
        for i in hidden_linears(head):
            head[i] = Linear8bit(head[i], device.cuda)
        notes.append("8-bit layers modelled (estimate/quant.py)")
    if has("pruning"):
        prune_weights(model)
    if has("freeze_fp32"):
        freeze_hidden(model)
    if has("amp"):  # the runner autocasts to fp16 on CUDA only (on a CPU it records the fix as not applied)
        notes.append("amp: autocast fp16 modelled (estimate/autocast.py)" if device.cuda else
                     "amp: CUDA-only, not applied on the CPU (as in the runner)")
    batch = batch_size(p, *((2, "smaller_batch") if has("smaller_batch") else ()))
    micro = batch // 2 if has("smaller_batch") else batch
    g = torch.Generator().manual_seed(p.get("seed", 0))
    batches = [known_batch(known, lambda: {"x": torch.randn(micro, 3, p["image"], p["image"], generator=g),
                                           "y": torch.randint(0, p["classes"], (micro,), generator=g)})
               for _ in range(batch // micro)]
    trainable = [q for q in model.parameters() if q.requires_grad]
    return StepPlan(model, adamw(trainable, device, lr=1e-4), batches,
                    loss=lambda m, b: nn.functional.cross_entropy(m(b["x"]), b["y"]), notes=notes,
                    autocast=torch.float16 if has("amp") and device.cuda else None,
                    facts={"batch_size": batch, "micro_batch": micro})
