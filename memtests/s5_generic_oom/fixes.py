"""S5's own fixes: the write-up's weight-side remedies for its conv net. Registered on import; scenarios.py lists them."""

from gpu_budget import Control, Fix
from gpu_budget.declare import fixes

QUANTIZATION = fixes.register(Fix(
    "quantization", "model", "hidden Linear layers to bitsandbytes int8 (frozen)", cost="accuracy-risk",
    needs=("bitsandbytes",), proposed_by=("S5",)))
PRUNING = fixes.register(Fix(
    "pruning", "model", "torch l1_unstructured(amount=0.2) on every Conv2d and Linear weight (keeps the dense weight "
    "and adds a dense mask); the write-up prunes conv layers only, and the dense head pruned here holds most of the "
    "weights, so most of the mask", cost="accuracy-risk", proposed_by=("S5",)))
FREEZE_FP32 = fixes.register(Fix(
    "freeze_fp32", "model", "freeze the weights quantization would make int8, keeping them fp32: what freezing alone "
    "saves, apart from 8-bit storage (a control for S5's quantization, not a remedy)", cost="accuracy-risk",
    conflicts=("quantization",), remedy=False, proposed_by=(fixes.ADDED_HERE,),
    control=Control("quantization", "freezing alone (the same weights frozen, kept fp32)", "freezing alone",
                    "8-bit storage on top")))
