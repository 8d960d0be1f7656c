"""A user's tiny BERT (random weights from its config) trained by real Trainers on the CPU, shaped by the case's params.

The runner (`run`) and the building blocks a gated script uses (`bert`,
`rows`, `trainer`, `mine`) of the Trainer tests (test_hf_trainer.py, test_hf_trainer_counting.py).
They write this file into their inner session's project (`source`); a plain
module, not a test module, imported there as `tiny_trainer` (tests/integration
is on sys.path here, the project's folder there). torch and transformers are
imported inside the functions, as a runner module does (docs/scenario-api.md).

`run`'s params (each optional, DEFAULTS):
- trainers: one dict per Trainer, trained one after another: "phases" (started
  in turn before its model, its rows and the Trainer itself), "args" (its
  TrainingArguments over the case's), "resume" (train from its checkpoint);
- args: TrainingArguments every Trainer gets, over ARGS;
- rows: training rows (half of them the evaluation's);
- callbacks: in order, "meter" (gpu_budget.meter_callback, counting the phases
  it ends), "mine" (a TrainerCallback that marks each step with
  gpu_budget.step()), "micro" (one that marks each micro-batch so), "ask" (one
  that asks for an evaluation after step 1);
- train_end, train_begin: meter_callback's;
- by_hand: steps the runner marks itself before any Trainer;
- after: steps the runner marks with gpu_budget.step() after the Trainers;
- watch_best_load: a Trainer that records the phase it loads its best model in.

It returns the last Trainer's optimizer steps, the phases the meter's
callbacks ended ("ended") and the phases the best model was loaded in.
"""

import tempfile
from pathlib import Path

import gpu_budget

ARGS = {"per_device_train_batch_size": 2, "use_cpu": True, "report_to": "none", "logging_strategy": "no",
        "save_strategy": "no", "disable_tqdm": True}
DEFAULTS = {"trainers": [{"phases": ["train_setup"]}], "args": {}, "rows": 4, "callbacks": ["meter"],
            "train_end": "train_end", "train_begin": None, "by_hand": 0, "after": 0, "watch_best_load": False}


def source() -> str:
    """This module's text, for an inner session's project (pytester.makepyfile(tiny_trainer=source()))."""
    return Path(__file__).read_text()


def bert():
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    return BertForSequenceClassification(BertConfig(
        vocab_size=128, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=32, num_labels=2))


def rows(count: int) -> list[dict]:
    import torch

    return [{"input_ids": ids, "labels": i % 2} for i, ids in enumerate(torch.randint(0, 128, (count, 16)))]


def trainer(out: str, model, data: list[dict], callbacks: list, args: dict, cls=None):
    """A Trainer (`cls`, transformers' by default) of `model` on `data` (half of it its evaluation's), writing to
    `out`, its TrainingArguments ARGS with `args` over them."""
    from transformers import Trainer, TrainingArguments

    return (cls or Trainer)(model=model, args=TrainingArguments(out, **{**ARGS, **args}), train_dataset=data,
                            eval_dataset=data[:len(data) // 2], callbacks=callbacks)


def mine():
    """A TrainerCallback of the user's own that marks each step with gpu_budget.step()."""
    from transformers import TrainerCallback

    class Mine(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            gpu_budget.step()

    return Mine()


def micro():
    """A TrainerCallback of the user's own that marks each micro-batch with gpu_budget.step(): as it begins (a step's
    first) and as each of a step's others ends but its last."""
    from transformers import TrainerCallback

    class EachMicroBatch(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            gpu_budget.step()

        def on_substep_end(self, args, state, control, **kwargs):
            gpu_budget.step()

    return EachMicroBatch()


def ask():
    """A TrainerCallback that asks for an evaluation after step 1, listed after the meter's, as users add theirs."""
    from transformers import TrainerCallback

    class AskForEvaluation(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            control.should_evaluate = control.should_evaluate or state.global_step == 1

    return AskForEvaluation()


def _watched(loaded_in: list, meter):
    """A Trainer that records the phase open as it loads its best model (load_best_model_at_end)."""
    from transformers import Trainer

    class Watched(Trainer):
        def _load_best_model(self):
            loaded_in.append(meter.open_phase[0])
            super()._load_best_model()

    return Watched


def run(ctx):
    p = {**DEFAULTS, **ctx.params}
    ended, loaded_in = [], []
    count = lambda: ended.append(1)  # one function for every callback: after_each runs once a phase, however often given
    made = {"meter": lambda: gpu_budget.meter_callback(ctx.meter, train_end=p["train_end"], after_each=count,
                                                          train_begin=p["train_begin"]),
            "mine": mine, "micro": micro, "ask": ask}
    for k in range(1, p["by_hand"] + 1):
        ctx.meter.start(f"train_step_{k}", step=k)
    with tempfile.TemporaryDirectory() as out:
        for each in p["trainers"]:
            phases = [*each.get("phases", ()), None, None, None]  # before its model, its rows, the Trainer
            _start(ctx.meter, phases[0])
            model = bert()
            _start(ctx.meter, phases[1])
            data = rows(p["rows"])
            _start(ctx.meter, phases[2])
            callbacks = [made[name]() for name in p["callbacks"]]
            last = trainer(out, model, data, callbacks, {**p["args"], **each.get("args", {})},
                           cls=_watched(loaded_in, ctx.meter) if p["watch_best_load"] else None)
            last.train(resume_from_checkpoint=True if each.get("resume") else None)
    for _ in range(p["after"]):
        gpu_budget.step()
    return {"optimizer_steps": last.state.global_step, "ended": len(ended), "best_model_loaded_in": loaded_in}


def _start(meter, phase: str | None) -> None:
    if phase is not None:
        meter.start(phase)
