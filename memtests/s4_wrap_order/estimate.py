"""S4's estimator builder: the runner's model and PEFT order (model.py) on fake tensors, 8-bit layers stood in for.

The Trainer is not run: where the run asks it for gradient checkpointing, the
builder does what the Trainer does before training, and records the error a
wrapper raises (the run then goes on without checkpointing, as here).
"""

from __future__ import annotations

import torch
from hf_compat import enable_checkpointing_like_trainer
from transformers import LlamaForCausalLM

from gpu_budget.estimate import StepPlan, adamw, batch_size
from gpu_budget.estimate.fake import known_batch
from gpu_budget.estimate.quant import quantize
from gpu_budget.estimate.step import TRAINER_MAX_GRAD_NORM

from .model import llama_config, peft_in_order, sample, switch


def build(p: dict, fixes: tuple[str, ...], device, known) -> StepPlan:
    on = switch(p, fixes.__contains__)
    base = LlamaForCausalLM._from_config(llama_config(p), dtype=getattr(torch, p.get("dtype", "float32")))
    swapped = quantize(base, 8, torch.float16, cuda=device.cuda) if on("load_in_8bit") else []
    facts = {"quantized_layers": len(swapped)}
    model = peft_in_order(base, p, on, facts)
    if on("gradient_checkpointing"):
        facts["trainer_checkpointing_error"] = enable_checkpointing_like_trainer(model)
    inputs = known_batch(known, lambda: {k: v.repeat(batch_size(p), 1) for k, v in sample(p).items()})
    trainable = [q for q in model.parameters() if q.requires_grad]
    return StepPlan(model, adamw(trainable, device, lr=1e-4), [inputs], max_grad_norm=TRAINER_MAX_GRAD_NORM,
                    notes=["8-bit layers modelled (estimate/quant.py)"] if swapped else [], facts=facts)
