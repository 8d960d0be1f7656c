"""The S1 model as the runner trains it and the estimator builds it: one config, one order of fixes.

runner.py loads the saved checkpoint into it (quantized by bitsandbytes at
load where a fix asks); estimate.py builds it from the config on fake tensors
(quantized by the estimator's stand-in layers). Both then call adapt().
"""

from __future__ import annotations

from collections.abc import Callable

# Wav2Vec2Attention's projections, as the write-up's own advice (check the names against print(model)) gives them:
# its list as written, ["query", "value", "projection", "output.dense"], matches one layer of wav2vec2 in peft
# (feature_projection.projection), so LoRA would train almost nothing; r, alpha and dropout are the write-up's
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "out_proj"]
# The classification head stays fully trainable under LoRA: projector and classifier. The write-up's LoraConfig
# names TaskType.SEQUENCE_CLASSIFICATION, which PEFT does not have (an AttributeError as written); its SEQ_CLS keeps
# only `classifier` trainable (PEFT's modules_to_save for it), so the projector (hidden x 256: 196,864 parameters
# at real scale, 3 MiB with its gradient and AdamW's moments) trains here beyond the write-up's, inside the tolerance.
HEADS = ["projector", "classifier"]
# Left unquantized under load_in_8bit/4bit: the head (modules_to_save trains it; an int8 weight cannot require
# grad) and feature_projection (SpecAugment masks its output in place, which bnb's matmul output forbids).
QUANT_SKIP = [*HEADS, "feature_projection.projection"]


def config(p: dict, num_labels: int, **overrides):
    """Wav2Vec2Config at the scale's dimensions (params['model'])."""
    from transformers import Wav2Vec2Config

    return Wav2Vec2Config(**p["model"], num_labels=num_labels, **overrides)


def quantized_bits(has: Callable[[str], bool]) -> int | None:
    """8 or 4 where load_in_8bit / load_in_4bit is applied, else None."""
    return next((b for b in (8, 4) if has(f"load_in_{b}bit")), None)


def adapt(model, has: Callable[[str], bool], quantized: bool):
    """The model-side fixes, in the runner's order: freeze the feature encoder, then LoRA (kbit-prepared first
    when the weights are quantized). Returns the model to train and facts about it."""
    facts = {}
    if has("freeze_feature_encoder"):
        model.freeze_feature_encoder()  # also stops the conv stack keeping activations for backward
    if has("lora"):
        from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training

        if quantized:
            model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=has("gradient_checkpointing"))
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.1, target_modules=LORA_TARGETS,
                                                 modules_to_save=HEADS))
        facts["lora_modules"] = sum(1 for n, _ in model.named_modules() if n.endswith(".lora_A"))
    return model, facts


def clip_lengths(p: dict) -> list[float]:
    """clip_seconds is one length, or a list of lengths cycled over the clips (mixed lengths)."""
    secs = p["clip_seconds"] if isinstance(p["clip_seconds"], list) else [p["clip_seconds"]]
    return [secs[i % len(secs)] for i in range(p["n_clips"])]


def input_seconds(p: dict, has: Callable[[str], bool]) -> float:
    """The longest input a train step sees: the longest clip, capped at max_seconds under truncate."""
    longest = max(clip_lengths(p))
    return min(longest, p["max_seconds"]) if has("truncate") else longest


def label_count(p: dict) -> int:
    """How many labels the clips carry (clip i has label i % n_labels)."""
    return len({i % p["n_labels"] for i in range(p["n_clips"])})
