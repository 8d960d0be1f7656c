"""S5 (seed 004): the generic "CUDA out of memory in large-model training" write-up, measured on a conv net.

scenarios.py declares the cases (no torch), fixes.py S5's own fixes, model.py
the net both runner.py (the measured fine-tune) and estimate.py (the
estimator's builder) build, search.py the bisection for the largest batch.
"""
