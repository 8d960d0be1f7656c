"""The S4 model as the runner trains it and the estimator builds it: a Llama, the user's wrapper, and the order
kbit preparation, PEFT and the wrapper meet it in."""

from __future__ import annotations

from collections.abc import Callable

from hf_compat import is_checkpointing
from torch import nn


class ModelWrap(nn.Module):
    """The user's wrapper: holds the model and forwards, nothing else."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, **kwargs):
        return self.model(**kwargs)


def switch(p: dict, has: Callable[[str], bool]) -> Callable[[str], bool]:
    """on(name): a fix of that name applied, or a truthy param of that name (load_in_8bit, gradient_checkpointing)."""
    return lambda name: has(name) or bool(p.get(name))


def llama_config(p: dict):
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=p["vocab"], hidden_size=p["hidden"], intermediate_size=p["intermediate"],
        num_hidden_layers=p["layers"], num_attention_heads=p["heads"], num_key_value_heads=p["kv_heads"],
        max_position_embeddings=8192, tie_word_embeddings=False,
    )


def sample(p: dict) -> dict:
    """One training sequence (the same every item and row: steps differ only by what the model keeps)."""
    import torch

    ids = torch.randint(0, p["vocab"], (p["seq_len"],), generator=torch.Generator().manual_seed(0))
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}


def _sixteen_bit(model) -> int:
    import torch

    return sum(q.numel() for q in model.parameters() if q.dtype in (torch.float16, torch.bfloat16))


def peft_in_order(base, p: dict, on: Callable[[str], bool], facts: dict):
    """kbit preparation and get_peft_model on what the user holds, wrapped before or after (or not at all);
    returns the model to train. What each step did goes into `facts` as it is found (the runner passes the
    meter's info, which goes out with the error too if the child dies)."""
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training

    order = "no_wrap" if on("no_wrap") else "peft_before_wrap" if on("peft_before_wrap") else "wrap_first"
    held = base if order != "wrap_first" else ModelWrap(base)  # what prepare/get_peft_model are handed
    if on("prepare_model_for_kbit_training"):
        before = _sixteen_bit(base)
        held = prepare_model_for_kbit_training(held)
        facts["kbit_upcast_params"] = before - _sixteen_bit(base)
        facts["kbit_checkpointing"] = is_checkpointing(base)
        facts["kbit_input_require_grads"] = hasattr(base, "_require_grads_hook")
    # with task_type PEFT raises on a wrapper (no prepare_inputs_for_generation), so a user drops it there
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
    return model
