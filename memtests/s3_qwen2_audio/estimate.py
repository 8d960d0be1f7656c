"""S3's estimator builder: the runner's model (model.py) on fake tensors, 4-bit layers stood in for."""

from __future__ import annotations

import torch
from transformers import Qwen2AudioForConditionalGeneration

from gpu_budget.estimate import StepPlan, adamw
from gpu_budget.estimate.fake import known_batch
from gpu_budget.estimate.quant import quantize

from .model import add_lora, batch, config, four_bit, resize


def build(p: dict, fixes: tuple[str, ...], device, known) -> StepPlan:
    has = fixes.__contains__
    dtype = getattr(torch, p.get("dtype", "float32"))
    model = Qwen2AudioForConditionalGeneration._from_config(config(p), dtype=dtype)
    nf4 = four_bit(p, has)
    swapped = quantize(model, 4, dtype, cuda=device.cuda) if nf4 else []
    _, new_ids = resize(model, p, has, mean_resizing=False)
    model, mode = add_lora(model, p, has, new_ids)
    inputs = known_batch(known, lambda: batch(p, new_ids))
    trainable = [q for q in model.parameters() if q.requires_grad]
    return StepPlan(model, adamw(trainable, device, lr=1e-4), [inputs],
                    autocast=dtype if dtype == torch.bfloat16 else None,  # the runner's bf16 autocast
                    notes=["resize without mean_resizing (the new rows' values do not change the step)"]
                    + (["4-bit layers modelled (estimate/quant.py)"] if nf4 else []),
                    facts={"trainable_params": sum(q.numel() for q in trainable), "quantized_layers": len(swapped),
                           "seq_len": inputs["input_ids"].shape[1], "embedding_training": mode})
