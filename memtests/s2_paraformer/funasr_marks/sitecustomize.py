"""The per-step marks of FunASR's trainer, for the gate: this folder is on train_ds.py's PYTHONPATH (tool.py's env).

The gate marks a Hugging Face Trainer's steps by itself; FunASR's
train_utils/trainer_ds.py Trainer has no callbacks, and its source stays as
installed. So when the command's process imports that module, its Trainer's
methods are wrapped (the class, not the file), the way the gate's own hook
wraps what it watches:

- train_epoch: phase `train_setup` until the first step (the DataLoader's
  workers start there);
- forward_step on a model in training: phase `train_step_<k>` (gpu_budget.step),
  and the batch's shape appended to funasr_steps.jsonl in the working folder:
  clips, padded LFR frames (60 ms each), padded tokens;
- validate_epoch: phase `eval_epoch_<n>`; save_checkpoint: phase `train_end`.

Does nothing outside the gate (no GPU_BUDGET_SOCKET), so the same command run
by hand trains unmarked. The gate's own sitecustomize runs first and runs this
one after it.
"""

import json
import os

MODULE = "funasr.train_utils.trainer_ds"
STEPS_FILE = "funasr_steps.jsonl"


def wrap(trainer_class) -> None:
    """Mark the phases of `trainer_class`'s epochs, steps, validation and checkpoint (once per class)."""
    import gpu_budget

    if getattr(trainer_class, "_gpu_budget_marked", False):
        return
    trainer_class._gpu_budget_marked = True
    real = {name: getattr(trainer_class, name) for name in
            ("train_epoch", "forward_step", "validate_epoch", "save_checkpoint")}
    state = {"steps": 0}

    def train_epoch(self, *args, **kwargs):
        if not state["steps"]:
            gpu_budget.phase("train_setup")
        return real["train_epoch"](self, *args, **kwargs)

    def forward_step(self, model, batch, *args, **kwargs):
        if model.training:
            state["steps"] = gpu_budget.step()
            speech, text = batch["speech"], batch["text"]
            with open(STEPS_FILE, "a") as out:
                out.write(json.dumps({"step": state["steps"], "clips": int(speech.shape[0]),
                                      "frames": int(speech.shape[1]), "tokens": int(text.shape[1])}) + "\n")
        return real["forward_step"](self, model, batch, *args, **kwargs)

    def validate_epoch(self, *args, **kwargs):
        epoch = kwargs.get("epoch", args[2] if len(args) > 2 else None)
        gpu_budget.phase(f"eval_epoch_{epoch}")
        return real["validate_epoch"](self, *args, **kwargs)

    def save_checkpoint(self, *args, **kwargs):
        gpu_budget.phase("train_end")
        return real["save_checkpoint"](self, *args, **kwargs)

    for name, method in (("train_epoch", train_epoch), ("forward_step", forward_step),
                         ("validate_epoch", validate_epoch), ("save_checkpoint", save_checkpoint)):
        method.__wrapped__ = real[name]
        setattr(trainer_class, name, method)


if os.environ.get("GPU_BUDGET_SOCKET"):  # the gate's hook (its sitecustomize ran before this one) watches imports
    from gpu_budget.isolate.autohook import after_import

    after_import(MODULE, lambda module: wrap(module.Trainer))
