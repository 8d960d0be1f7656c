"""S4's scenarios (8B model, 8-bit + LoRA, wrapped in a user ModelWrap: 32 GB -> over 80 GB): what the memtests gate.

AS_REPORTED wraps first and then applies PEFT, and asks the Trainer for
gradient checkpointing (TRL's SFTConfig default); the Trainer raises on the
wrapper, so the run goes on without it, as a user who drops the flag would.
FIXED applies prepare_model_for_kbit_training and get_peft_model to the real
model, then wraps. The fixes are listed once, in `supports`: the generic kbit
preparation by name, S4's own as the Fix objects of fixes.py.
"""

from gpu_budget import Scenario
from gpu_budget.estimate import register

from .fixes import ALL_LINEAR, NO_WRAP, PEFT_BEFORE_WRAP

# Tiny: batch 1 and a 2048-token vocab, three steps (peaks steady from step 2): on the CPU the 16-bit matmuls of the
# 8-bit layers' backward and of the bf16 lm_head have no AVX2 kernel and take most of a step; the wrap order's
# effect (activations kept without checkpointing) is per sequence and per layer, so it stays.
TINY = {"vocab": 2048, "hidden": 128, "intermediate": 344, "layers": 16, "heads": 4, "kv_heads": 4,
        "seq_len": 256, "batch_size": 1, "steps": 3}
REAL = {  # Llama-3-8B
    "vocab": 128256, "hidden": 4096, "intermediate": 14336, "layers": 32, "heads": 32, "kv_heads": 8,
    "seq_len": 2048, "batch_size": 4, "needs_cuda": True,
}

BASE = Scenario(
    name="s4_wrap_order",
    prepare="s4_wrap_order.runner:prepare",
    run="s4_wrap_order.runner:run",
    # non-int8 weights in bf16 as on a GPU (so the kbit upcast has work to do); a param, so variants can change it
    params={"load_in_8bit": True, "dtype": "bfloat16", "gradient_checkpointing": True, "lora_r": 8, "steps": 4},
    scales={"tiny": TINY, "real": REAL},
    # the wrap-order fixes (load_in_8bit and gradient_checkpointing are on through params)
    supports=(PEFT_BEFORE_WRAP, NO_WRAP, "prepare_model_for_kbit_training", ALL_LINEAR),
    prepared_from=("vocab", "hidden", "intermediate", "layers", "heads", "kv_heads", "dtype"),  # the checkpoint
)

AS_REPORTED = BASE                                                       # wrap, then get_peft_model
FIXED = BASE.with_fixes("peft_before_wrap", "prepare_model_for_kbit_training")
VARIANTS = {
    "as-reported": AS_REPORTED,
    "as-reported+kbit": BASE.with_fixes("prepare_model_for_kbit_training"),  # upcasts, but no checkpointing
    "as-reported+all-linear": BASE.with_fixes("all_linear"),                # LoRA lands on lm_head too
    "fixed": FIXED,
    "fixed+all-linear": FIXED.with_fixes("all_linear"),
    "peft_before_wrap-only": BASE.with_fixes("peft_before_wrap"),           # order alone, no kbit prepare
    "no-wrap": BASE.with_fixes("no_wrap"),                                  # the standard flow
    "as-reported-fp32": BASE.with_params(load_in_8bit=False, dtype="float32"),
    "fixed-fp32": FIXED.with_params(load_in_8bit=False, dtype="float32"),    # kbit prepare is a no-op here
}

register(BASE.run, "s4_wrap_order.estimate:build")  # the estimator's model of the runner (estimate.py)
