"""The estimator's own error, in a module of its own: fake.py and checkpoint.py both raise it, and fake.py imports
checkpoint.py."""


class EstimateError(RuntimeError):
    """The estimator cannot follow this code on fake tensors (the message says why and what to change)."""
