"""S4's runner: an 8-bit Llama with LoRA, wrapped in a user ModelWrap(nn.Module), needed >80 GB instead of ~32 GB.

The suspicion is the wrap order: a wrapper hides the transformers model from
PEFT and from the Trainer. Measured with peft 0.21 / transformers 5.23:
`prepare_model_for_kbit_training(ModelWrap(m))` still upcasts 16-bit weights
but skips checkpointing and enable_input_require_grads; the Trainer raises
AttributeError for gradient checkpointing on any wrapper (either order), so a
user drops the flag; "all-linear" on the wrapper also puts LoRA on lm_head.

A knob is on where its fix is applied or a param of the same name is truthy
(model.switch): the fixes scenarios.py lists, and load_in_8bit (bitsandbytes
int8, which works on CPU with bitsandbytes 0.50.2) and gradient_checkpointing
(requested through TrainingArguments, as TRL's SFTConfig does by default) as
params. model.peft_in_order applies the order, for this runner and the
estimator alike; by default get_peft_model(ModelWrap(model)) without task_type.

The write-up trained with TRL's SFTTrainer; this runner uses transformers'
Trainer with the settings SFTConfig changes that matter here (gradient
checkpointing asked for) but one: SFTConfig turns `bf16` on where `fp16` is
not set, so SFTTrainer's forward runs under bfloat16 autocast, and this
runner's does not. Measured at tiny scale on the CPU (the tensors the first
forward keeps for backward): as reported 26.9 MiB without autocast, 24.7 MiB
with it; fixed 5.0 and 4.5 MiB: the non-int8 weights are bfloat16 already, so
autocast keeps at most 2.2 MiB less, under the tiny baselines' tolerance
(0.5 % + 4 MiB of a peak near 500 MiB), and is left off. At real scale the
difference is a GPU figure, not measured here. test_s4_sft_trainer.py runs
SFTTrainer itself, bf16 included.
"""

from __future__ import annotations

import tempfile

from hf_compat import checkpointing_arg

from gpu_budget import meter_callback

from .model import llama_config, peft_in_order, sample, switch


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
        self.item = sample(p)
        self.n = p["batch_size"] * p["steps"]

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict:
        return self.item


def _phase_callback(meter, counter: dict):
    """Each optimizer step is a measured phase; counts layer-0 norm calls in step 1 (2 = checkpointed)."""

    def step_done() -> None:
        counter.setdefault("step1_layer0_norm_calls", counter.get("calls", 0))
        meter.info.setdefault("step1_layer0_norm_calls", counter.get("calls", 0))
        counter["calls"] = 0

    return meter_callback(meter, after_each=step_done)


def run(ctx) -> dict:
    p, meter = ctx.params, ctx.meter
    on = switch(p, ctx.has)  # a fix or a truthy param
    import peft  # noqa: F401  imported (with bitsandbytes) before the first phase, not inside one
    import torch
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
    model = peft_in_order(base, p, on, facts)

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
