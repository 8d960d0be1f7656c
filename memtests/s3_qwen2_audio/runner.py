"""S3's runner: the Qwen2-Audio LoRA (+4-bit) fine-tune that ran out of memory after new tokens were added.

The write-up's root cause: adding tokens resizes embed_tokens and lm_head, and
the resized matrices are then trained and saved in full. LLaMA-Factory does
exactly that when the vocabulary is resized (it puts both layers in
`modules_to_save`), so that is the "as reported" variant here. S3's fixes
(fixes.py) pick how the new rows get trained instead; with none of them the
embeddings stay frozen (LoRA only). model.py applies them, for this runner and
the estimator alike; load_in_4bit is also settable as a param.

As LLaMA-Factory trains it (its defaults and its QLoRA examples): LoRA of
rank 8 and alpha 16; the trainable parameters in float32 (model.add_lora:
its upcast, unless `pure_bf16`); where the model is bfloat16 (the real
scale), the forward under bfloat16 autocast, as its Trainer runs it with
`bf16: true`, which the float32 copies of embed_tokens and lm_head need
beside the model's bfloat16 layers. The tiny model is float32: neither of
the last two changes it.

Not as LLaMA-Factory trains it, each measured or estimated:
- gradient checkpointing, its Trainer's default: the loop keeps each
  layer's activations. At tiny scale checkpointing keeps 11 MiB less for
  backward (220 against 231 MiB; the logits' share is the same), inside
  the baselines' tolerance of a 2.5 GiB peak. At real scale the estimator
  puts the runner 2.5 GiB above a checkpointed run as reported (32.70
  against 30.22 GiB) and 4.9 GiB above it LoRA only (13.56 against
  8.63 GiB); the verdicts against 24 GB are the same either way.
- lora_target `all` (every linear layer of the language model): LoRA here
  is on the attention projections, as the LLaMA-Factory run of
  test_s3_llamafactory.py sets it.
- Nor is its lora_dropout, 0.0: the runner's 0.05 keeps a mask per adapter
  input for backward, which the estimator puts at 0.5 GiB at real scale
  (LoRA only: 13.56 against 13.06 GiB) and 0.9 MiB at tiny. It stays until
  a GPU run can measure the change: the committed GPU runs and the
  estimator's page (docs/estimator-cuda.md) compare against runs made
  with 0.05.

No tokenizer (the real one is a hub download): the new tokens are the ids
right after the embedding matrix, so they force a resize. With the real
tokenizer, shorter than the 156032 rows, a few added tokens could fit without
one (current LLaMA-Factory then skips the resize, and refuses it on a
quantized model).
"""

from __future__ import annotations

from .model import add_lora, batch, config, four_bit, resize


def prepare(ctx) -> None:
    """Random weights from the config, saved the way a hub checkpoint would be.

    Built on the device the child has: on a GPU host the 7B model is created and
    initialised on the GPU (seconds) instead of by minutes of CPU initialisation
    (benchmarks/checkpoint_build.py); the weights' values never move a peak.
    """
    import torch
    from transformers import Qwen2AudioForConditionalGeneration

    torch.manual_seed(0)
    dtype = getattr(torch, ctx.params.get("dtype", "float32"))  # built in that dtype: no fp32 detour at 7B
    with torch.device(ctx.device):
        model = Qwen2AudioForConditionalGeneration._from_config(config(ctx.params), dtype=dtype)
    model.save_pretrained(ctx.assets)


def run(ctx) -> dict:
    p, meter = ctx.params, ctx.meter
    import peft  # noqa: F401  imported (with bitsandbytes) before the first phase, not inside one
    import torch
    from transformers import BitsAndBytesConfig, Qwen2AudioForConditionalGeneration

    meter.start("load")
    nf4 = four_bit(p, ctx.has)
    dtype = getattr(torch, p.get("dtype", "float32"))
    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype)
    model = Qwen2AudioForConditionalGeneration.from_pretrained(
        ctx.assets, dtype=dtype, quantization_config=quant if nf4 else None,
        device_map=ctx.device if nf4 else None)
    if not nf4:
        model.to(ctx.device)
    linear4bit = sum(type(m).__name__ == "Linear4bit" for m in model.modules())

    meter.start("resize")
    old_rows, new_ids = resize(model, p, ctx.has)
    rows = model.get_input_embeddings().weight.shape[0]

    meter.start("peft")
    model, mode = add_lora(model, p, ctx.has, new_ids)
    lora = [n for n, m in model.named_modules() if hasattr(m, "lora_A")]
    trainable, total = model.get_nb_trainable_parameters()  # counts 4-bit weights unpacked
    lora_params = sum(q.numel() for n, q in model.named_parameters() if "lora_" in n and q.requires_grad)
    facts = {  # known before the steps: they go out with the error too, if the child dies
        "trainable_params": trainable, "total_params": total, "added_tokens": p["added_tokens"],
        "hidden": p["hidden"], "lora_params": lora_params,
        "embedding_rows": rows, "vocab_before": old_rows, "load_in_4bit": nf4, "linear4bit_modules": linear4bit,
        "lora_modules": len(lora), "lora_in_audio_tower": any("audio_tower" in n for n in lora),
        "embedding_training": mode,
        "trainable_dtypes": sorted({str(q.dtype).removeprefix("torch.") for q in model.parameters() if q.requires_grad}),
    }
    meter.info.update(facts)

    meter.start("data")
    inputs = {k: v.to(ctx.device) for k, v in batch(p, new_ids).items()}
    optimizer = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=1e-4)
    model.train()

    losses = []
    for step in range(1, p["steps"] + 1):
        meter.start(f"train_step_{step}", step=step)
        with torch.autocast(ctx.device, dtype=dtype, enabled=dtype == torch.bfloat16):  # bf16: true (docstring)
            loss = model(**inputs).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(round(loss.item(), 4))
    meter.stop()
    return {**facts, "seq_len": inputs["input_ids"].shape[1], "losses": losses}
