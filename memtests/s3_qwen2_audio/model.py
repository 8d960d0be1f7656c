"""The S3 model as the runner trains it and the estimator builds it: config, resize, LoRA and the batch."""

from __future__ import annotations

from collections.abc import Callable

from .fixes import EMBEDDING_MODES

AUDIO_TOKEN = 151646  # Qwen2-Audio's <|AUDIO|> id (config.audio_token_index)
LORA_TARGET = r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj)"  # plain names would also hit the audio tower
# alpha is LLaMA-Factory's default (2 x rank); its lora_dropout default is 0.0, and this is not (runner.py says why)
LORA_DROPOUT = 0.05


def config(p: dict):
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


def four_bit(p: dict, has: Callable[[str], bool]) -> bool:
    """nf4 weights: the load_in_4bit fix or param."""
    return has("load_in_4bit") or bool(p.get("load_in_4bit"))


def resize(model, p: dict, has: Callable[[str], bool], **kwargs) -> tuple[int, list[int]]:
    """Add params['added_tokens'] rows (padded to a multiple under pad_to_multiple_of); (rows before, new ids)."""
    old_rows = model.get_input_embeddings().weight.shape[0]
    new_ids = list(range(old_rows, old_rows + p["added_tokens"]))
    pad = p.get("pad_multiple", 64) if has("pad_to_multiple_of") else None
    model.resize_token_embeddings(old_rows + p["added_tokens"], pad_to_multiple_of=pad, **kwargs)
    return old_rows, new_ids


def add_lora(model, p: dict, has: Callable[[str], bool], new_ids: list[int]):
    """get_peft_model with LoRA on the language model, the new rows trained as the embedding mode says, then every
    trainable parameter in float32, as LLaMA-Factory leaves them; returns (the PEFT model, the mode or None).

    LLaMA-Factory's init_adapter upcasts the trainable parameters to float32 unless `pure_bf16` is set ("Upcasting
    trainable params to float32."). PEFT already makes the LoRA weights float32; the copies `modules_to_save` makes
    of embed_tokens and lm_head keep the model's dtype, so in a bfloat16 model (the real scale) the upcast doubles
    what the two copies, their gradients and AdamW's two moments hold: at 7B, 2 bytes more a parameter in each of
    the four, over 2 x 156,096 x 4096 parameters, about 10.2 GB. In a float32 model (the tiny scale) it changes
    nothing.
    """
    import torch
    from peft import LoraConfig, get_peft_model

    mode = next((f for f in EMBEDDING_MODES if has(f)), None)
    extra = {
        "modules_to_save": {"modules_to_save": ["embed_tokens", "lm_head"]},
        "trainable_token_indices": {"trainable_token_indices": new_ids},
        "trainable_token_indices_dict": {"trainable_token_indices": {"embed_tokens": new_ids, "lm_head": new_ids}},
    }.get(mode, {})
    config = LoraConfig(r=p["lora_r"], lora_alpha=2 * p["lora_r"], lora_dropout=LORA_DROPOUT,
                        target_modules=LORA_TARGET, **extra)
    model = get_peft_model(model, config)
    for q in model.parameters():
        if q.requires_grad and q.dtype != torch.float32:
            q.data = q.data.float()
    return model, mode


def batch(p: dict, new_ids: list[int]):
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

