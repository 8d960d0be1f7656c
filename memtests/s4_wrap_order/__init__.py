"""S4 (seed 003): an 8-bit Llama with LoRA, wrapped in a user ModelWrap before PEFT, needed >80 GB instead of ~32 GB.

scenarios.py declares the cases (no torch), fixes.py the wrap-order fixes,
model.py the model and the order PEFT meets it in, which runner.py (the
measured fine-tune) and estimate.py (the estimator's builder) share.
"""
