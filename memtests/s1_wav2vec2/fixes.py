"""S1's own fixes: what only a wav2vec2 audio classifier, or S1's in-memory dataset, can take.

Registered on import (scenarios.py lists them in its Scenarios' `supports`); the
generic ones (truncate, lora, gradient_checkpointing, ...) are gpu_budget.declare.fixes'.
"""

from gpu_budget import Fix
from gpu_budget.declare import fixes

FREEZE_FEATURE_ENCODER = fixes.register(Fix(
    "freeze_feature_encoder", "model", "freeze wav2vec2's conv feature encoder: no gradients or kept activations "
    "for it; fewer trainable parameters", cost="accuracy-risk", proposed_by=(fixes.ADDED_HERE,)))
# the worker blow-up: each DataLoader worker copies a dataset held as Python objects
SHARED_MEMORY = fixes.register(Fix(
    "shared_memory", "data", "hold the in-memory dataset in one shared float32 tensor: forked or spawned workers "
    "read views of it and copy nothing", proposed_by=(fixes.ADDED_HERE,)))
