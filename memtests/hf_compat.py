"""Names that moved between transformers 5 releases, read from the installed one (the GPU image has an older 5.x)."""

from __future__ import annotations


def checkpointing_arg(training_arguments) -> str:
    """The TrainingArguments field that turns on activation checkpointing.

    transformers 5.2x renamed `gradient_checkpointing` to `activation_checkpointing`
    (the old name still works, with a warning); 5.17 has only `gradient_checkpointing`,
    so passing the new name there is a TypeError.
    """
    fields = training_arguments.__dataclass_fields__
    return "activation_checkpointing" if "activation_checkpointing" in fields else "gradient_checkpointing"


def is_checkpointing(model) -> bool:
    """Whether a transformers model reports activation checkpointing on (either release's property name)."""
    for name in ("is_activation_checkpointing", "is_gradient_checkpointing"):
        if hasattr(type(model), name) or hasattr(model, name):
            return bool(getattr(model, name, False))
    return False


def enable_checkpointing_like_trainer(model) -> str | None:
    """What Trainer(activation_checkpointing=True) does to `model` before training (the estimator calls it where
    the runner's Trainer would); returns the AttributeError a wrapper raises, as text, or None."""
    try:
        if hasattr(model, "activation_checkpointing_enable"):
            model.activation_checkpointing_enable(activation_checkpointing_kwargs=None, every_n_layers=1,
                                                  offload=False)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=None)
    except AttributeError as exc:
        return f"{type(exc).__name__}: {exc}"[:300]
    return None
