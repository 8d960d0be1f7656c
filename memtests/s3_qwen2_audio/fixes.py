"""S3's own fixes: how the rows of a resized vocabulary train. Registered on import; scenarios.py lists them."""

from gpu_budget import Fix
from gpu_budget.declare import fixes

MODULES_TO_SAVE = fixes.register(Fix(
    "modules_to_save", "model", "train the resized embed_tokens and lm_head in full (LLaMA-Factory's choice after "
    "new tokens): the as-reported setting, not a remedy", needs=("peft",), remedy=False, proposed_by=("S3",)))
TRAINABLE_TOKEN_INDICES = fixes.register(Fix(
    "trainable_token_indices", "model", "train only the new rows of the input embedding (PEFT "
    "trainable_token_indices, list form)", cost="accuracy-risk", needs=("peft",), replaces=("modules_to_save",),
    conflicts=("trainable_token_indices_dict",), proposed_by=(fixes.ADDED_HERE,)))
TRAINABLE_TOKEN_INDICES_DICT = fixes.register(Fix(
    "trainable_token_indices_dict", "model", "train only the new rows of embed_tokens and lm_head (PEFT "
    "trainable_token_indices, dict form)", cost="accuracy-risk", needs=("peft",), replaces=("modules_to_save",),
    proposed_by=(fixes.ADDED_HERE,)))
# how the new rows train, one of these or none (LoRA only)
EMBEDDING_MODES = (MODULES_TO_SAVE.name, TRAINABLE_TOKEN_INDICES.name, TRAINABLE_TOKEN_INDICES_DICT.name)
