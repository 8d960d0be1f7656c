"""Estimator builders: each scenario's model, optimizer and micro-batches, built as its runner builds them.

A builder runs inside the estimator's fake world (gpu_budget/estimate.py), so
building a 7B model allocates nothing. It takes the runner's params and
fixes and follows the runner's code path: the same config class and config,
the same PEFT/quantization order, the same optimizer as the runner (or as the
HF Trainer picks it), the same batch shapes. Where it must differ, it says so
in `notes`, which the estimate carries into every report.

Training loops themselves (Trainer, FunASR) are not run: the estimator's
step is forward + backward per micro-batch, gradient clipping where the
Trainer clips, and the optimizer step.
"""

from __future__ import annotations

import numpy as np
import torch

from gpu_budget.estimate import StepPlan, adamw
from gpu_budget.estimate_fake import known_tensor
from gpu_budget.estimate_quant import quantize

TRAINER_MAX_GRAD_NORM = 1.0  # TrainingArguments.max_grad_norm's default


def _known_batch(known, make) -> dict:
    """make() builds a batch of real tensors, outside the fake world; they become fakes with known values."""
    from gpu_budget.estimate_fake import outside

    with outside():
        real = make()
    return {k: known_tensor(known, v) for k, v in real.items()}


def _trainer_checkpointing(model) -> str | None:
    """What Trainer(activation_checkpointing=True) does to `model`; the error a wrapper raises, else None."""
    try:
        if hasattr(model, "activation_checkpointing_enable"):
            model.activation_checkpointing_enable(activation_checkpointing_kwargs=None, every_n_layers=1,
                                                  offload=False)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=None)
    except AttributeError as exc:
        return f"{type(exc).__name__}: {exc}"[:300]
    return None


# -- S1: wav2vec2 + Trainer ------------------------------------------------------------------------

def s1(p: dict, fixes: tuple[str, ...], device, known) -> StepPlan:
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    from transformers import Wav2Vec2Config, Wav2Vec2ForSequenceClassification

    from gpu_budget.scenarios.s1_wav2vec2 import HEADS, LORA_TARGETS, clip_lengths

    has = fixes.__contains__
    labels = len({i % p["n_labels"] for i in range(p["n_clips"])})
    config = Wav2Vec2Config(**p["model"], num_labels=labels, layerdrop=0.0)
    notes = [("layerdrop=0: every layer runs (the real run drops each with p=0.1 at random: the estimate is the "
             "all-layers case)")]
    model = Wav2Vec2ForSequenceClassification(config)
    bits = next((b for b in (8, 4) if has(f"load_in_{b}bit")), None)
    if bits:
        quantize(model, bits, torch.float32, cuda=device.cuda, skip_modules=[*HEADS, "feature_projection.projection"])
    if has("freeze_feature_encoder"):
        model.freeze_feature_encoder()
    if has("lora"):
        if bits:
            model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=has("gradient_checkpointing"))
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.1, target_modules=LORA_TARGETS,
                                                 modules_to_save=HEADS))
    if has("gradient_checkpointing"):
        _trainer_checkpointing(model)

    seconds = max(clip_lengths(p))
    if has("truncate"):
        seconds = min(seconds, p["max_seconds"])
    if isinstance(p["clip_seconds"], list) and len(set(p["clip_seconds"])) > 1:
        notes.append("mixed clip lengths: every micro-batch at the longest")
    samples, bs = int(p["sampling_rate"] * seconds), p["batch_size"]
    rng = np.random.default_rng(p.get("seed", 42))
    batches = [_known_batch(known, lambda: {
        "input_values": torch.from_numpy(rng.standard_normal((bs, samples)).astype(np.float32)),
        "labels": torch.arange(bs) % labels,
    }) for _ in range(p["gradient_accumulation_steps"])]
    trainable = [q for q in model.parameters() if q.requires_grad]
    # transformers >= 5 with torch >= 2.8: the Trainer's default optimizer is adamw_torch_fused
    optimizer = adamw(trainable, device, fused=True, lr=p["learning_rate"], weight_decay=p["weight_decay"])
    return StepPlan(model, optimizer, batches, max_grad_norm=TRAINER_MAX_GRAD_NORM, notes=notes, run_micro=2,
                    facts={"input_seconds": seconds, "batch_size": bs,
                           "gradient_accumulation_steps": p["gradient_accumulation_steps"],
                           "trainable_params": sum(q.numel() for q in trainable), "quantized_bits": bits})


# -- S2: FunASR Paraformer ---------------------------------------------------------------------------

def s2(p: dict, fixes: tuple[str, ...], device, known) -> StepPlan:
    from gpu_budget.scenarios import s2_paraformer as runner
    from gpu_budget.scenarios.s2_paraformer_estimate import largest_batch, patch_cif

    Paraformer, _ = runner._funasr()
    config = runner.model_config(p)
    model = Paraformer(**config)
    lengths, tokens = largest_batch(p, fixes)
    batch = _known_batch(known, lambda: _s2_batch(p, lengths, tokens))
    undo = []
    if known is not None:  # fake tensors: CIF's fire positions and the sampler's predictions have no values
        undo.append(patch_cif([t + config["predictor_bias"] for t in tokens], known))
        known.assume(torch.ops.aten.argmax.default, 0)

    def loss(m, b):
        return m(b["speech"], b["speech_lengths"], b["text"], b["text_lengths"])[0]

    return StepPlan(model, adamw(model.parameters(), device, lr=5e-5), [batch], loss=loss, undo=undo,
                    notes=[("the step of the run's heaviest batch (largest activation proxy; "
                           "s2_paraformer_estimate.py)"),
                           "CIF fires exactly the target length; argmax predictions taken as matching no target"],
                    facts={"batch_clips": len(lengths), "longest_frames": max(lengths), "tokens": tokens})


def _s2_batch(p: dict, lengths: list[int], tokens: list[int]) -> dict:
    """Padded LFR features (560-dim) and padded token ids, as the runner feeds them."""
    g = torch.Generator().manual_seed(p["seed"])
    speech = torch.zeros(len(lengths), max(lengths), 80 * 7)
    text = torch.full((len(tokens), max(tokens)), -1, dtype=torch.long)
    for i, (n, t) in enumerate(zip(lengths, tokens)):
        speech[i, :n] = torch.randn(n, 80 * 7, generator=g)
        text[i, :t] = torch.randint(3, p["vocab"], (t,), generator=g)
    return {"speech": speech, "speech_lengths": torch.tensor(lengths), "text": text,
            "text_lengths": torch.tensor(tokens)}


# -- S3: Qwen2-Audio, LoRA, resized embeddings, 4-bit ---------------------------------------------------

def s3(p: dict, fixes: tuple[str, ...], device, known) -> StepPlan:
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2AudioForConditionalGeneration

    from gpu_budget.scenarios.s3_qwen2_audio import EMBEDDING_MODES, LORA_TARGET, _batch, _config

    has = fixes.__contains__
    dtype = getattr(torch, p.get("dtype", "float32"))
    model = Qwen2AudioForConditionalGeneration._from_config(_config(p), dtype=dtype)
    four_bit = has("load_in_4bit") or bool(p.get("load_in_4bit"))
    swapped = quantize(model, 4, dtype, cuda=device.cuda) if four_bit else []
    old_rows = model.get_input_embeddings().weight.shape[0]
    new_ids = list(range(old_rows, old_rows + p["added_tokens"]))
    pad = p.get("pad_multiple", 64) if has("pad_to_multiple_of") else None
    model.resize_token_embeddings(old_rows + p["added_tokens"], pad_to_multiple_of=pad, mean_resizing=False)
    mode = next((f for f in EMBEDDING_MODES if has(f)), None)
    extra = {
        "modules_to_save": {"modules_to_save": ["embed_tokens", "lm_head"]},
        "trainable_token_indices": {"trainable_token_indices": new_ids},
        "trainable_token_indices_dict": {"trainable_token_indices": {"embed_tokens": new_ids, "lm_head": new_ids}},
    }.get(mode, {})
    model = get_peft_model(model, LoraConfig(r=p["lora_r"], lora_alpha=2 * p["lora_r"], lora_dropout=0.05,
                                             target_modules=LORA_TARGET, **extra))
    batch = _known_batch(known, lambda: _batch(p, new_ids))
    trainable = [q for q in model.parameters() if q.requires_grad]
    return StepPlan(model, adamw(trainable, device, lr=1e-4), [batch],
                    notes=["resize without mean_resizing (the new rows' values do not change the step)"]
                    + (["4-bit layers modelled (estimate_quant.py)"] if four_bit else []),
                    facts={"trainable_params": sum(q.numel() for q in trainable), "quantized_layers": len(swapped),
                           "seq_len": batch["input_ids"].shape[1], "embedding_training": mode})


# -- S4: Llama, 8-bit, PEFT and a user wrapper -----------------------------------------------------------

def s4(p: dict, fixes: tuple[str, ...], device, known) -> StepPlan:
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    from transformers import LlamaConfig, LlamaForCausalLM

    from gpu_budget.scenarios.s4_wrap_order import ModelWrap

    def on(name: str) -> bool:
        return name in fixes or bool(p.get(name))

    config = LlamaConfig(vocab_size=p["vocab"], hidden_size=p["hidden"], intermediate_size=p["intermediate"],
                         num_hidden_layers=p["layers"], num_attention_heads=p["heads"],
                         num_key_value_heads=p["kv_heads"], max_position_embeddings=8192, tie_word_embeddings=False)
    base = LlamaForCausalLM._from_config(config, dtype=getattr(torch, p.get("dtype", "float32")))
    swapped = quantize(base, 8, torch.float16, cuda=device.cuda) if on("load_in_8bit") else []
    order = "no_wrap" if on("no_wrap") else "peft_before_wrap" if on("peft_before_wrap") else "wrap_first"
    held = base if order != "wrap_first" else ModelWrap(base)
    if on("prepare_model_for_kbit_training"):
        held = prepare_model_for_kbit_training(held)
    lora = LoraConfig(r=p["lora_r"], lora_alpha=2 * p["lora_r"], lora_dropout=0.05,
                      target_modules="all-linear" if on("all_linear") else ["q_proj", "v_proj"],
                      **({"task_type": "CAUSAL_LM"} if order != "wrap_first" else {}))
    peft_model = get_peft_model(held, lora)
    model = ModelWrap(peft_model) if order == "peft_before_wrap" else peft_model
    error = _trainer_checkpointing(model) if on("gradient_checkpointing") else None
    def make() -> dict:
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(0, p["vocab"], (p["seq_len"],), generator=g).repeat(p["batch_size"], 1)
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}

    batch = _known_batch(known, make)
    trainable = [q for q in model.parameters() if q.requires_grad]
    return StepPlan(model, adamw(trainable, device, lr=1e-4), [batch], max_grad_norm=TRAINER_MAX_GRAD_NORM,
                    notes=["8-bit layers modelled (estimate_quant.py)"] if swapped else [],
                    facts={"order": order, "trainable_params": sum(q.numel() for q in trainable),
                           "quantized_layers": len(swapped), "trainer_checkpointing_error": error})


# -- S5: conv net ------------------------------------------------------------------------------------

def s5(p: dict, fixes: tuple[str, ...], device, known) -> StepPlan:
    from torch import nn

    from gpu_budget.scenarios.s5_generic_oom import ConvNet, _prune

    has = fixes.__contains__
    model = ConvNet(p["width"], p["hidden"], p["classes"])
    notes = []
    if has("quantization"):
        head = model.classifier
        for i in [i for i, m in enumerate(head) if isinstance(m, nn.Linear)][:-1]:
            from gpu_budget.estimate_quant import Linear8bit

            head[i] = Linear8bit(head[i], device.cuda)
        notes.append("8-bit layers modelled (estimate_quant.py)")
    if has("pruning"):
        _prune(model)
    if has("amp"):
        notes.append("amp: not modelled (autocast acts on CUDA tensors; the estimate is the fp32 step)")
    batch, micro = p["batch_size"], p["batch_size"] // 2 if has("smaller_batch") else p["batch_size"]
    g = torch.Generator().manual_seed(p.get("seed", 0))
    batches = [_known_batch(known, lambda: {"x": torch.randn(micro, 3, p["image"], p["image"], generator=g),
                                            "y": torch.randint(0, p["classes"], (micro,), generator=g)})
               for _ in range(batch // micro)]
    trainable = [q for q in model.parameters() if q.requires_grad]
    return StepPlan(model, adamw(trainable, device, lr=1e-4), batches,
                    loss=lambda m, b: nn.functional.cross_entropy(m(b["x"]), b["y"]), notes=notes,
                    facts={"batch_size": batch, "micro_batch": micro})
