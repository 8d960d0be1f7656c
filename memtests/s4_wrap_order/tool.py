"""S4 as its user ran it: TRL's SFTTrainer on the runner's tiny checkpoint, the script (sft_train.py) a command.

SFTTrainer loads the model's tokenizer (its processing class) from the checkpoint
folder, as a user's hub checkpoint holds one. No tokenizer can be downloaded
here, so `prepare` builds the runner's checkpoint and saves a word-level
tokenizer over its vocabulary beside it; the script feeds token ids, so the
tokenizer only has to exist and agree on size. The wrap order is the script's
`--order`, not a registered fix: the tool is run as its user ran it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gpu_budget import Scenario

from .runner import prepare as prepare_model
from .scenarios import BASE, REAL, TINY

MODEL_KEYS = BASE.prepared_from  # what builds the checkpoint: the runner's own


def prepare(ctx) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    prepare_model(ctx)
    words = Tokenizer(models.WordLevel(vocab={f"t{i}": i for i in range(ctx.params["vocab"])}, unk_token="t0"))
    words.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, unk_token="t0", eos_token="t1", pad_token="t2",
                                        bos_token="t3")
    tokenizer.save_pretrained(ctx.assets)


# the gate's hook in the script's process measures the Trainer's steps
SFT_TRAINER = Scenario(
    name="s4_sft_trainer",
    command=[sys.executable, "sft_train.py", "--model_dir", "{assets}", "--order", "{order}",
             "--gradient_checkpointing", "{gradient_checkpointing}",
             *(a for k in ("steps", "batch_size", "seq_len") for a in (f"--{k}", f"{{{k}}}"))],
    cwd=str(Path(__file__).resolve().parent),
    prepare="s4_wrap_order.tool:prepare",
    params={"dtype": "bfloat16", "order": "wrap_first", "gradient_checkpointing": "on"},  # SFTConfig's default: on
    scales={"tiny": {k: TINY[k] for k in (*MODEL_KEYS[:-1], "seq_len", "batch_size", "steps")},
            # Llama-3-8B as the write-up trained it, on a GPU only (benchmarks/gpu_validation.sh sft)
            "real": {**{k: REAL[k] for k in (*MODEL_KEYS[:-1], "seq_len", "batch_size", "needs_cuda")}, "steps": 3}},
    prepared_from=MODEL_KEYS,
)
