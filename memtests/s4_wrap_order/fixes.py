"""S4's own fixes: the order a wrapper module and PEFT meet the model in. Registered on import; scenarios.py lists them."""

from gpu_budget import Fix
from gpu_budget.declare import fixes

PEFT_BEFORE_WRAP = fixes.register(Fix(
    "peft_before_wrap", "model", "prepare_model_for_kbit_training / get_peft_model on the real model, then wrap it",
    needs=("peft",), proposed_by=("S4",)))
NO_WRAP = fixes.register(Fix(
    "no_wrap", "model", "no wrapper module at all (subclass instead): the standard flow",
    conflicts=("peft_before_wrap",), proposed_by=("S4",)))
ALL_LINEAR = fixes.register(Fix(
    "all_linear", "model", "LoRA on every linear layer (target_modules='all-linear'; on a wrapper also lm_head): "
    "a variant, not a remedy", needs=("peft",), remedy=False, proposed_by=("S4",)))
