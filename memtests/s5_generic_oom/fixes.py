"""S5's own fixes: the write-up's weight-side remedies for its conv net. Registered on import; scenarios.py lists them."""

from gpu_budget import Fix, fixes

QUANTIZATION = fixes.register(Fix(
    "quantization", "model", "hidden Linear layers to bitsandbytes int8 (frozen)", cost="accuracy-risk",
    needs=("bitsandbytes",), proposed_by=("S5",)))
PRUNING = fixes.register(Fix(
    "pruning", "model", "torch l1_unstructured(amount=0.2) on conv layers (keeps the dense weight and adds a dense "
    "mask)", cost="accuracy-risk", proposed_by=("S5",)))
