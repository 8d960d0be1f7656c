"""S3's scenarios (Qwen2-Audio-7B, LoRA + 4-bit, OOM on a 24 GB GPU after adding tokens): what the memtests gate.

AS_REPORTED is what LLaMA-Factory does after new tokens: resize the
embeddings (padded to a multiple of 64) and train embed_tokens + lm_head in
full through `modules_to_save`. The variants train only the new rows, or no
embeddings at all. The fixes are listed once, in `supports`: generic ones by
name, S3's own as the Fix objects of fixes.py.
"""

from gpu_budget import Scenario
from gpu_budget.estimate import register

from .fixes import MODULES_TO_SAVE, TRAINABLE_TOKEN_INDICES, TRAINABLE_TOKEN_INDICES_DICT

TINY = {  # real vocab (the resized matrices are what costs), everything else small
    "audio_d_model": 64, "audio_layers": 2, "audio_heads": 4, "max_source_positions": 100,
    "vocab": 156032, "hidden": 256, "intermediate": 704, "layers": 2, "heads": 4, "kv_heads": 4,
    "text_len": 64, "steps": 3,  # steady from step 2 (three steps give no growth slope; the real scale takes 4)
}
REAL = {  # Qwen2-Audio-7B: Whisper-large-v3-sized encoder, Qwen-7B text model
    "audio_d_model": 1280, "audio_layers": 32, "audio_heads": 20, "max_source_positions": 1500,
    "vocab": 156032, "hidden": 4096, "intermediate": 11008, "layers": 32, "heads": 32, "kv_heads": 32,
    "text_len": 256, "dtype": "bfloat16", "needs_cuda": True,
}

BASE = Scenario(
    name="s3_qwen2_audio",
    prepare="s3_qwen2_audio.runner:prepare",
    run="s3_qwen2_audio.runner:run",
    params={"added_tokens": 20, "batch_size": 1, "lora_r": 8, "steps": 4, "load_in_4bit": True},
    scales={"tiny": TINY, "real": REAL},
    fixes=("pad_to_multiple_of",),
    # how the new rows train (load_in_4bit is on through params, so not offered as a fix here)
    supports=("pad_to_multiple_of", MODULES_TO_SAVE, TRAINABLE_TOKEN_INDICES, TRAINABLE_TOKEN_INDICES_DICT),
    # the checkpoint only: batch, text length and added tokens (explored) reuse it
    prepared_from=("vocab", "hidden", "intermediate", "layers", "heads", "kv_heads", "audio_d_model", "audio_heads",
                   "audio_layers", "max_source_positions", "dtype"),
)

AS_REPORTED = BASE.with_fixes("modules_to_save")
TOKEN_ROWS = BASE.with_fixes("trainable_token_indices")            # new input-embedding rows only
TOKEN_ROWS_BOTH = BASE.with_fixes("trainable_token_indices_dict")  # new rows of embed_tokens and lm_head
NO_EMBEDDING_TRAINING = BASE                                       # LoRA only
VARIANTS = {
    "as-reported": AS_REPORTED,
    "trainable_token_indices": TOKEN_ROWS,
    "trainable_token_indices_dict": TOKEN_ROWS_BOTH,
    "no-embedding-training": NO_EMBEDDING_TRAINING,
}

register(BASE.run, "s3_qwen2_audio.estimate:build")  # the estimator's model of the runner (estimate.py)
