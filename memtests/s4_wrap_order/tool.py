"""The checkpoint TRL's SFTTrainer trains in S4's tool case: the runner's tiny Llama, and a tokenizer beside it.

SFTTrainer loads the model's tokenizer (its processing class) from the checkpoint
folder, as a user's hub checkpoint holds one. No tokenizer can be downloaded
here, so a word-level one over the model's vocabulary is built and saved; the
script feeds token ids, so the tokenizer only has to exist and agree on size.
"""

from __future__ import annotations

from .runner import prepare as prepare_model


def prepare(ctx) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    prepare_model(ctx)
    words = Tokenizer(models.WordLevel(vocab={f"t{i}": i for i in range(ctx.params["vocab"])}, unk_token="t0"))
    words.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, unk_token="t0", eos_token="t1", pad_token="t2",
                                        bos_token="t3")
    tokenizer.save_pretrained(ctx.assets)
