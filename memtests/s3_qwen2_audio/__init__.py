"""S3 (seed 002): Qwen2-Audio LoRA (+4-bit) that ran out of memory on a 24 GB card after new tokens were added.

scenarios.py declares the cases (no torch), fixes.py how the new rows train,
model.py the model, its resize, its LoRA and its batch, which runner.py (the
measured fine-tune) and estimate.py (the estimator's builder) share.
"""
