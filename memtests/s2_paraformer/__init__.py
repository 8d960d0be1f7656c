"""S2 (seed 001): a FunASR Paraformer-large fine-tune whose memory grows step by step under dynamic batching.

scenarios.py declares the cases (no torch), fixes.py S2's own fixes, model.py
the model and data.py the clips and batches that both runner.py (the measured
fine-tune) and estimate.py (the estimator's builder) use.
"""
