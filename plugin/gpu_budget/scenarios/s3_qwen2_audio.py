"""S3: Qwen2-Audio LoRA (+4-bit) that ran out of memory after new tokens were added.

The write-up's root cause: adding tokens resizes embed_tokens and lm_head, and
the resized matrices are then trained and saved in full. LLaMA-Factory does
exactly that when the vocabulary is resized (it puts both layers in
`modules_to_save`), so that is the "as reported" variant here. The fixes pick
how the new rows get trained instead:

  modules_to_save               embed_tokens + lm_head copied and trained in full (as reported)
  trainable_token_indices       only the new rows of the input embedding (list form)
  trainable_token_indices_dict  only the new rows of embed_tokens and lm_head (dict form)
  (none of those)               embeddings frozen, LoRA only
  pad_to_multiple_of            resize to a multiple of params["pad_multiple"] (64)
  load_in_4bit                  nf4 through bitsandbytes (also settable as a param)

No tokenizer (the real one is a hub download): the new tokens are the ids
right after the embedding matrix, so they force a resize. With the real
tokenizer, shorter than the 156032 rows, a few added tokens could fit without
one (current LLaMA-Factory then skips the resize, and refuses it on a
quantized model).
"""

from __future__ import annotations

AUDIO_TOKEN = 151646  # Qwen2-Audio's <|AUDIO|> id (config.audio_token_index)
EMBEDDING_MODES = ("modules_to_save", "trainable_token_indices", "trainable_token_indices_dict")
LORA_TARGET = r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj)"  # plain names would also hit the audio tower


def _config(p: dict):
    from transformers import Qwen2AudioConfig, Qwen2AudioEncoderConfig, Qwen2Config

    audio = Qwen2AudioEncoderConfig(
        d_model=p["audio_d_model"], encoder_layers=p["audio_layers"], encoder_attention_heads=p["audio_heads"],
        encoder_ffn_dim=4 * p["audio_d_model"], num_mel_bins=128, max_source_positions=p["max_source_positions"],
    )
    text = Qwen2Config(
        vocab_size=p["vocab"], hidden_size=p["hidden"], intermediate_size=p["intermediate"],
        num_hidden_layers=p["layers"], num_attention_heads=p["heads"], num_key_value_heads=p["kv_heads"],
        max_position_embeddings=8192, tie_word_embeddings=False,
    )
    return Qwen2AudioConfig(audio_config=audio, text_config=text, audio_token_index=AUDIO_TOKEN)


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
        model = Qwen2AudioForConditionalGeneration._from_config(_config(ctx.params), dtype=dtype)
    model.save_pretrained(ctx.assets)


def _batch(p: dict, new_ids: list[int]):
    """Synthetic mel features plus text that uses the new tokens; audio positions carry no loss."""
    import torch

    g = torch.Generator().manual_seed(0)
    frames = 2 * p["max_source_positions"]  # the encoder accepts exactly this many mel frames
    n_audio = (frames // 2 - 2) // 2 + 1  # conv stride 2, then avg-pool 2
    bs, n_text = p["batch_size"], p["text_len"]
    text = torch.randint(0, AUDIO_TOKEN - 1, (bs, n_text), generator=g)  # every 4th token a new one:
    text[:, 1::4] = torch.tensor(new_ids)[torch.randint(0, len(new_ids), (bs, len(range(1, n_text, 4))), generator=g)]
    ids = torch.cat([torch.full((bs, n_audio), AUDIO_TOKEN), text], dim=1)
    labels = ids.clone()
    labels[:, :n_audio] = -100
    return {
        "input_ids": ids, "labels": labels, "attention_mask": torch.ones_like(ids),
        "input_features": torch.randn(bs, 128, frames, generator=g),
        "feature_attention_mask": torch.ones(bs, frames, dtype=torch.long),
    }


def run(ctx) -> dict:
    p, meter = ctx.params, ctx.meter
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import BitsAndBytesConfig, Qwen2AudioForConditionalGeneration

    meter.start("load")
    four_bit = ctx.has("load_in_4bit") or bool(p.get("load_in_4bit"))
    dtype = getattr(torch, p.get("dtype", "float32"))
    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype)
    model = Qwen2AudioForConditionalGeneration.from_pretrained(
        ctx.assets, dtype=dtype, quantization_config=quant if four_bit else None,
        device_map=ctx.device if four_bit else None)
    if not four_bit:
        model.to(ctx.device)
    linear4bit = sum(type(m).__name__ == "Linear4bit" for m in model.modules())

    meter.start("resize")
    old_rows = model.get_input_embeddings().weight.shape[0]
    new_ids = list(range(old_rows, old_rows + p["added_tokens"]))
    pad = p.get("pad_multiple", 64) if ctx.has("pad_to_multiple_of") else None
    model.resize_token_embeddings(old_rows + p["added_tokens"], pad_to_multiple_of=pad)
    rows = model.get_input_embeddings().weight.shape[0]

    meter.start("peft")
    mode = next((f for f in EMBEDDING_MODES if ctx.has(f)), None)
    extra = {
        "modules_to_save": {"modules_to_save": ["embed_tokens", "lm_head"]},
        "trainable_token_indices": {"trainable_token_indices": new_ids},
        "trainable_token_indices_dict": {"trainable_token_indices": {"embed_tokens": new_ids, "lm_head": new_ids}},
    }.get(mode, {})
    config = LoraConfig(r=p["lora_r"], lora_alpha=2 * p["lora_r"], lora_dropout=0.05,
                        target_modules=LORA_TARGET, **extra)
    model = get_peft_model(model, config)
    lora = [n for n, m in model.named_modules() if hasattr(m, "lora_A")]
    trainable, total = model.get_nb_trainable_parameters()  # counts 4-bit weights unpacked
    lora_params = sum(q.numel() for n, q in model.named_parameters() if "lora_" in n and q.requires_grad)
    facts = {  # known before the steps: they go out with the error too, if the child dies
        "trainable_params": trainable, "total_params": total, "added_tokens": p["added_tokens"],
        "hidden": p["hidden"], "lora_params": lora_params,
        "embedding_rows": rows, "vocab_before": old_rows, "load_in_4bit": four_bit, "linear4bit_modules": linear4bit,
        "lora_modules": len(lora), "lora_in_audio_tower": any("audio_tower" in n for n in lora),
        "embedding_training": mode,
    }
    meter.info.update(facts)

    meter.start("data")
    batch = {k: v.to(ctx.device) for k, v in _batch(p, new_ids).items()}
    optimizer = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=1e-4)
    model.train()

    losses = []
    for step in range(1, p["steps"] + 1):
        meter.start(f"train_step_{step}", step=step)
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(round(loss.item(), 4))
    meter.stop()
    return {**facts, "seq_len": batch["input_ids"].shape[1], "losses": losses}
