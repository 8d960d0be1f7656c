"""S4: an 8-bit Llama with LoRA, wrapped in a user ModelWrap(nn.Module), needed >80 GB instead of ~32 GB.

The suspicion is the wrap order: a wrapper hides the transformers model from
PEFT and from the Trainer. Measured with peft 0.21 / transformers 5.23:
`prepare_model_for_kbit_training(ModelWrap(m))` still upcasts 16-bit weights
but skips checkpointing and enable_input_require_grads; the Trainer raises
AttributeError for gradient checkpointing on any wrapper (either order), so a
user drops the flag; "all-linear" on the wrapper also puts LoRA on lm_head.
Knobs (a fix name or a truthy param of the same name):

  peft_before_wrap                 prepare/get_peft_model on the real model, then wrap (the fix)
  no_wrap                          no wrapper at all (the write-up's "standard flow")
  prepare_model_for_kbit_training  called on whatever the user holds at that point
  gradient_checkpointing           requested through TrainingArguments, as TRL's SFTConfig does by default
  all_linear                       target_modules="all-linear" instead of q_proj/v_proj
  load_in_8bit                     bitsandbytes int8 (works on CPU with bitsandbytes 0.50.2)

Default order (none of the first two): get_peft_model(ModelWrap(model)) without
task_type; with task_type="CAUSAL_LM" PEFT raises (the wrapper has no
prepare_inputs_for_generation), so a user drops it.
"""

from __future__ import annotations

import tempfile

from torch import nn

from gpu_budget.scenarios.hf_compat import checkpointing_arg, is_checkpointing


class ModelWrap(nn.Module):
    """The user's wrapper: holds the model and forwards, nothing else."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, **kwargs):
        return self.model(**kwargs)


def llama_config(p: dict):
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=p["vocab"], hidden_size=p["hidden"], intermediate_size=p["intermediate"],
        num_hidden_layers=p["layers"], num_attention_heads=p["heads"], num_key_value_heads=p["kv_heads"],
        max_position_embeddings=8192, tie_word_embeddings=False,
    )


def prepare(ctx) -> None:
    """A Llama with random weights, saved the way a hub checkpoint would be.

    Built on the device the child has: on a GPU host the 8B model is created and
    initialised on the GPU (seconds) instead of by minutes of CPU initialisation
    (benchmarks/checkpoint_build.py); the weights' values never move a peak.
    """
    import torch
    from transformers import LlamaForCausalLM

    p = ctx.params
    torch.manual_seed(0)
    dtype = getattr(torch, p.get("dtype", "float32"))  # built in that dtype: no fp32 detour at 8B
    with torch.device(ctx.device):
        model = LlamaForCausalLM._from_config(llama_config(p), dtype=dtype)
    model.save_pretrained(ctx.assets)


class _Dataset:
    """The same random sequence every item: steps differ only by what the model keeps."""

    def __init__(self, p: dict) -> None:
        import torch

        ids = torch.randint(0, p["vocab"], (p["seq_len"],), generator=torch.Generator().manual_seed(0))
        self.item = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}
        self.n = p["batch_size"] * p["steps"]

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict:
        return self.item


def _phase_callback(meter, counter: dict):
    """Each optimizer step is a measured phase; counts layer-0 norm calls in step 1 (2 = checkpointed)."""
    from transformers import TrainerCallback

    class Phases(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            meter.start(f"train_step_{state.global_step + 1}", step=state.global_step + 1)
            counter["calls"] = 0

        def on_step_end(self, args, state, control, **kw):
            counter.setdefault("step1_layer0_norm_calls", counter["calls"])
            meter.info.setdefault("step1_layer0_norm_calls", counter["calls"])

        def on_train_end(self, args, state, control, **kw):
            meter.start("train_end")

    return Phases()


def _sixteen_bit(model) -> int:
    import torch

    return sum(q.numel() for q in model.parameters() if q.dtype in (torch.float16, torch.bfloat16))


def run(ctx) -> dict:
    p, meter = ctx.params, ctx.meter

    def on(name: str) -> bool:  # a fix or a truthy param
        return ctx.has(name) or bool(p.get(name))

    import torch
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    from transformers import BitsAndBytesConfig, LlamaForCausalLM, Trainer, TrainingArguments

    meter.start("load")
    dtype = getattr(torch, p.get("dtype", "float32"))
    quant = BitsAndBytesConfig(load_in_8bit=True) if on("load_in_8bit") else None
    base = LlamaForCausalLM.from_pretrained(ctx.assets, quantization_config=quant, dtype=dtype,
                                            device_map=ctx.device if quant else None)
    if quant is None:
        base.to(ctx.device)
    facts = meter.info  # what is found goes out with the error too, if the child dies (out of memory on a GPU)
    facts["int8_modules"] = sum(type(m).__name__ == "Linear8bitLt" for m in base.modules())

    meter.start("peft")
    order = "no_wrap" if on("no_wrap") else "peft_before_wrap" if on("peft_before_wrap") else "wrap_first"
    held = base if order != "wrap_first" else ModelWrap(base)  # what prepare/get_peft_model are handed
    if on("prepare_model_for_kbit_training"):
        before = _sixteen_bit(base)
        held = prepare_model_for_kbit_training(held)
        facts["kbit_upcast_params"] = before - _sixteen_bit(base)
        facts["kbit_checkpointing"] = is_checkpointing(base)
        facts["kbit_input_require_grads"] = hasattr(base, "_require_grads_hook")
    config = LoraConfig(r=p["lora_r"], lora_alpha=2 * p["lora_r"], lora_dropout=0.05,
                        target_modules="all-linear" if on("all_linear") else ["q_proj", "v_proj"],
                        **({"task_type": "CAUSAL_LM"} if order != "wrap_first" else {}))
    peft_model = get_peft_model(held, config)
    model = ModelWrap(peft_model) if order == "peft_before_wrap" else peft_model
    lora = [n for n, m in model.named_modules() if hasattr(m, "lora_A")]
    facts.update(
        order=order, trainable_params=sum(q.numel() for q in model.parameters() if q.requires_grad),
        lora_modules=len(lora), lora_on_lm_head=any(n.endswith("lm_head") for n in lora),
        lora_kinds=sorted({n.rsplit(".", 1)[-1] for n in lora}),
    )

    meter.start("trainer")
    counter: dict = {}

    def count(*_) -> None:
        counter["calls"] = counter.get("calls", 0) + 1

    # a submodule: transformers checkpoints the layer's forward, so only hooks inside it run again on recompute
    base.model.layers[0].input_layernorm.register_forward_pre_hook(count)

    def train(checkpointing: bool) -> None:
        with tempfile.TemporaryDirectory(prefix="s4-") as out:
            args = TrainingArguments(
                output_dir=out, max_steps=p["steps"], per_device_train_batch_size=p["batch_size"],
                learning_rate=1e-4, optim="adamw_torch",
                **{checkpointing_arg(TrainingArguments): checkpointing},  # renamed within transformers 5 (hf_compat)
                use_cpu=ctx.device == "cpu", report_to="none", save_strategy="no", logging_strategy="no",
                disable_tqdm=True, remove_unused_columns=False, dataloader_num_workers=0,
            )
            callbacks = [_phase_callback(meter, counter)]
            Trainer(model=model, args=args, train_dataset=_Dataset(p), callbacks=callbacks).train()

    try:
        train(on("gradient_checkpointing"))
    except AttributeError as exc:  # the wrapper hides activation_checkpointing_enable: the user drops the flag
        facts["trainer_checkpointing_error"] = f"{type(exc).__name__}: {exc}"[:300]
        meter.start("trainer_retry")
        train(False)
    meter.stop()
    facts["step1_layer0_norm_calls"] = counter.get("step1_layer0_norm_calls")
    facts["checkpointing_active"] = counter.get("step1_layer0_norm_calls", 0) >= 2
    return facts
