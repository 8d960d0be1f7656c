"""S1 (seed 000): a wav2vec2 bird-sound classifier fine-tune whose host RAM hit Colab's 12.7 GB.

scenarios.py declares the cases (the memtests import it: no torch), fixes.py
the fixes only this case study has, model.py the model both runner.py (the
measured fine-tune, in a child) and estimate.py (the estimator's builder) build.
"""
