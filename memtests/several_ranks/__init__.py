"""Several ranks: a small causal LM fine-tuned on 2 ranks (DDP, FSDP2), launched the way users launch it."""
