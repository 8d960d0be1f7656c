"""S1's estimator builder: the runner's model (model.py) on fake tensors, one Trainer step's micro-batches.

The Trainer itself is not run: the step is forward + backward per micro-batch,
clipping at the Trainer's default and the optimizer the Trainer picks.
"""

from __future__ import annotations

import numpy as np
import torch
from hf_compat import enable_checkpointing_like_trainer
from transformers import Wav2Vec2ForSequenceClassification

from gpu_budget.estimate import StepPlan, adamw, batch_size
from gpu_budget.estimate.fake import known_batch
from gpu_budget.estimate.quant import quantize
from gpu_budget.estimate.step import TRAINER_MAX_GRAD_NORM

from .model import QUANT_SKIP, adapt, config, input_seconds, label_count, quantized_bits


def build(p: dict, fixes: tuple[str, ...], device, known) -> StepPlan:
    has = fixes.__contains__
    labels = label_count(p)
    notes = [("layerdrop=0: every layer runs (the real run drops each with p=0.1 at random: the estimate is the "
             "all-layers case)")]
    if p["fp16"] and device.cuda:  # the Trainer autocasts the forward on a GPU only
        notes.append("fp16: the Trainer's autocast modelled (estimate/autocast.py)")
    model = Wav2Vec2ForSequenceClassification(config(p, labels, layerdrop=0.0))
    bits = quantized_bits(has)
    if bits:
        quantize(model, bits, torch.float32, cuda=device.cuda, skip_modules=QUANT_SKIP)
    model, _ = adapt(model, has, quantized=bool(bits))
    if has("gradient_checkpointing"):
        enable_checkpointing_like_trainer(model)

    seconds = input_seconds(p, has)
    if isinstance(p["clip_seconds"], list) and len(set(p["clip_seconds"])) > 1:
        notes.append("mixed clip lengths: every micro-batch at the longest")
    samples, bs = int(p["sampling_rate"] * seconds), batch_size(p)
    rng = np.random.default_rng(p.get("seed", 42))
    batches = [known_batch(known, lambda: {
        "input_values": torch.from_numpy(rng.standard_normal((bs, samples)).astype(np.float32)),
        "labels": torch.arange(bs) % labels,
    }) for _ in range(p["gradient_accumulation_steps"])]
    trainable = [q for q in model.parameters() if q.requires_grad]
    # transformers >= 5 with torch >= 2.8: the Trainer's default optimizer is adamw_torch_fused
    optimizer = adamw(trainable, device, fused=True, lr=p["learning_rate"], weight_decay=p["weight_decay"])
    return StepPlan(model, optimizer, batches, max_grad_norm=TRAINER_MAX_GRAD_NORM, notes=notes, run_micro=2,
                    autocast=torch.float16 if p["fp16"] and device.cuda else None, run_steps=p["max_steps"],
                    facts={"input_seconds": seconds, "batch_size": bs,
                           "gradient_accumulation_steps": p["gradient_accumulation_steps"],
                           "trainable_params": sum(q.numel() for q in trainable), "quantized_bits": bits})
