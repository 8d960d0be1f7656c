"""The estimator's own error, in a module of its own: fake.py and checkpoint.py both raise it, and fake.py imports
checkpoint.py. `unknown_value` names the line of model code that asked for a value fake tensors lack."""

from __future__ import annotations

import sys
from pathlib import Path

# functions of libraries known to read a value of their weights, and what leaves the step's memory as it is
KNOWN_READERS = {
    "_init_added_embeddings_weights_with_mean": "resize_token_embeddings(..., mean_resizing=False): the new rows' "
                                                "values do not change the step",
}


class EstimateError(RuntimeError):
    """The estimator cannot follow this code on fake tensors (the message says why and what to change)."""


def _short(filename: str) -> str:
    """A frame's file as a reader finds it: from its package (site-packages/...) or from the working folder."""
    path = Path(filename)
    parts = path.parts
    if "site-packages" in parts:
        return "/".join(parts[len(parts) - parts[::-1].index("site-packages"):])
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return filename


def _experts_loop(owner: object) -> str | None:
    """What to say where a mixture-of-experts layer loops over the experts its router picked (transformers' eager
    experts): which ones run is a value of the weights, so no estimate follows that loop."""
    if owner is None or not type(owner).__name__.endswith("Experts") or not hasattr(owner, "num_experts"):
        return None
    return (f"{type(owner).__name__} runs its experts one by one (config._experts_implementation='eager'), each on "
            "the tokens its router sends it, which the estimator cannot model; it estimates the grouped form "
            "(experts_implementation='grouped_mm'), a figure of that run, not of this one")


def unknown_value() -> str:
    """Why a value cannot be read on fake tensors, where the running code read it (the innermost frame outside
    torch and the estimator: its dispatch and distributions' checks are never the line to change) and what to
    change: the argument that avoids a known reader's branch, else the general advice."""
    import torch

    own = (str(Path(torch.__file__).parent), str(Path(__file__).parent))
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(own):
        frame = frame.f_back
    where = "" if frame is None else f", read at {_short(frame.f_code.co_filename)}:{frame.f_lineno} in " \
                                     f"{frame.f_code.co_name}"
    known = None if frame is None else KNOWN_READERS.get(frame.f_code.co_name)
    first = None if frame is None else next(iter(frame.f_locals.values()), None)  # a method's first argument: self
    general = ("Configure the estimate so this branch does not arise (e.g. layerdrop=0) or give the builder the "
               "value")
    advice = _experts_loop(first) or (f"Give {known}" if known else general)
    return (f"the model reads a value (.item() / bool()) of a tensor computed from weights or random numbers{where}; "
            f"fake tensors have no values. {advice}.")
