"""A user's own Trainer test gets per-step phases through gpu_budget.meter_callback (a real Trainer, a tiny BERT)."""

import pytest

pytest.importorskip("transformers")

RUNNER = '''
"""The user's runner: their own tiny BERT (random weights from its config) and their own Trainer."""
import tempfile

from gpu_budget import meter_callback


def run(ctx):
    import torch
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

    p = ctx.params
    ctx.meter.start("load")
    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(
        vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=32, num_labels=2))
    ctx.meter.start("data")
    rows = [{"input_ids": ids, "labels": i % 2} for i, ids in enumerate(torch.randint(0, 128, (8, 16)))]
    ctx.meter.start("train_setup")
    ended = []
    callbacks = [meter_callback(ctx.meter, train_end=p["train_end"], after_each=lambda: ended.append(1))]
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            out, per_device_train_batch_size=2, gradient_accumulation_steps=2, num_train_epochs=2,  # 4 optimizer steps
            eval_strategy=p["eval_strategy"], eval_steps=2, use_cpu=True, report_to="none", save_strategy="no",
            logging_strategy="no", disable_tqdm=True)
        trainer = Trainer(model=model, args=args, train_dataset=rows, eval_dataset=rows[:4],
                          callbacks=callbacks if p["callback"] else [])
        trainer.train()
    return {"optimizer_steps": trainer.state.global_step, "ended": len(ended)}
'''

TESTS = '''
import pytest
from gpu_budget import Scenario

BERT = Scenario(name="tiny_bert", run="runners:run",
                params={"callback": True, "eval_strategy": "steps", "train_end": "train_end"})
FRONT = ["load", "data", "train_setup"]


@pytest.mark.gpu_budget
def test_trainer_steps_are_phases(gpu_budget):
    row = gpu_budget.measure(BERT, label="eval-steps")
    assert row.info["optimizer_steps"] == 4 and row.info["ended"] == 6  # 4 steps and 2 evaluations
    assert list(row.phases) == FRONT + ["train_step_1", "train_step_2", "eval_step_2",
                                           "train_step_3", "train_step_4", "eval_step_4", "train_end"]
    assert [s.step for s in row.steps] == [1, 2, 3, 4]
    assert len(row.steps) == 4 and row.growth["ram_per_step"] is None  # its series, too short to judge growth

    row = gpu_budget.measure(BERT.with_params(eval_strategy="epoch", train_end=None), label="eval-epoch")
    assert list(row.phases) == FRONT + ["train_step_1", "train_step_2", "eval_epoch_1",
                                           "train_step_3", "train_step_4", "eval_epoch_2"]

    row = gpu_budget.measure(BERT.with_params(callback=False), label="no-callback")
    assert row.info["optimizer_steps"] == 4 and list(row.phases) == FRONT  # the Trainer alone: no steps
    assert row.steps == () and row.growth["ram_per_step"] is None
'''


def test_a_users_trainer_gets_a_phase_per_optimizer_step_and_evaluation(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)  # the inner run records its baselines
    pytester.makeini("[pytest]\ngpu_budget_preload = torch transformers\n")
    pytester.makepyfile(runners=RUNNER, test_trainer=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")
    result.assert_outcomes(passed=1)



RESUMING = '''
"""A runner that trains one epoch with a checkpoint, then resumes that checkpoint for two more epochs."""
import tempfile

from gpu_budget import meter_callback


def run(ctx):
    import torch
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

    def trainer(out, epochs, save):
        torch.manual_seed(0)
        model = BertForSequenceClassification(BertConfig(
            vocab_size=128, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=32, num_labels=2))
        rows = [{"input_ids": ids, "labels": i % 2} for i, ids in enumerate(torch.randint(0, 128, (4, 16)))]
        args = TrainingArguments(out, per_device_train_batch_size=2, num_train_epochs=epochs, eval_strategy="epoch",
                                 save_strategy=save, use_cpu=True, report_to="none", logging_strategy="no",
                                 disable_tqdm=True)  # 2 optimizer steps an epoch
        return Trainer(model=model, args=args, train_dataset=rows, eval_dataset=rows[:2],
                       callbacks=[meter_callback(ctx.meter)])

    with tempfile.TemporaryDirectory() as out:
        ctx.meter.start("train_setup")
        trainer(out, 1, "epoch").train()
        ctx.meter.start("resume_setup")
        resumed = trainer(out, 3, "no")
        resumed.train(resume_from_checkpoint=True)
    return {"optimizer_steps": resumed.state.global_step}
'''

RESUMING_TESTS = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget
def test_resumed(gpu_budget):
    row = gpu_budget.measure(Scenario(name="resumed", run="resuming:run"))
    assert row.info["optimizer_steps"] == 6
    assert list(row.phases) == ["train_setup", "train_step_1", "train_step_2", "eval_epoch_1", "train_end",
                                "resume_setup", "train_step_3", "train_step_4", "eval_epoch_2",
                                "train_step_5", "train_step_6", "eval_epoch_3", "train_end (2)"]
'''


def test_an_evaluation_after_an_epoch_is_named_by_the_trainers_epoch(pytester, monkeypatch):
    """A training resumed from its checkpoint goes on at the Trainer's epoch (epochs 2 and 3, not 1 and 2 again)."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload = torch transformers\n")
    pytester.makepyfile(resuming=RESUMING, test_resuming=RESUMING_TESTS)
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=1)


FLOW = '''
"""A runner whose TrainingArguments the case gives (`args`): 4 optimizer steps of a tiny BERT."""
import tempfile

from gpu_budget import meter_callback


def run(ctx):
    import torch
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(
        vocab_size=128, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=32, num_labels=2))
    rows = [{"input_ids": ids, "labels": i % 2} for i, ids in enumerate(torch.randint(0, 128, (8, 16)))]
    loaded_in = []

    class Watched(Trainer):
        def _load_best_model(self):
            loaded_in.append(ctx.meter.open_phase[0])
            super()._load_best_model()

    with tempfile.TemporaryDirectory() as out:
        ctx.meter.start("train_setup")
        args = TrainingArguments(out, per_device_train_batch_size=2, max_steps=4, use_cpu=True, report_to="none",
                                 logging_strategy="no", disable_tqdm=True, **ctx.params["args"])
        Watched(model=model, args=args, train_dataset=rows, eval_dataset=rows[:2],
                callbacks=[meter_callback(ctx.meter)]).train()
    return {"best_model_loaded_in": loaded_in}
'''

FLOW_TESTS = '''
import pytest
from gpu_budget import Scenario

FLOW = Scenario(name="flow", run="flow:run", params={"args": {}})
EVAL = {"eval_strategy": "steps", "eval_steps": 2, "save_strategy": "no"}


@pytest.mark.gpu_budget
def test_eval_on_start(gpu_budget):
    row = gpu_budget.measure(FLOW.with_params(args={**EVAL, "eval_on_start": True}))
    assert list(row.phases) == ["train_setup", "eval_step_0", "train_step_1", "train_step_2", "eval_step_2",
                                "train_step_3", "train_step_4", "eval_step_4", "train_end"]


@pytest.mark.gpu_budget
def test_load_best_model_at_end(gpu_budget):
    row = gpu_budget.measure(FLOW.with_params(args={**EVAL, "save_strategy": "steps", "save_steps": 2,
                                                    "load_best_model_at_end": True}))
    assert list(row.phases)[-3:] == ["train_step_4", "eval_step_4", "train_end"]
    assert row.info["best_model_loaded_in"] == ["train_end"]  # not in the last evaluation's phase
'''


def test_the_trainers_own_evaluations_and_loads_are_phases_of_their_own(pytester, monkeypatch):
    """An evaluation before the first step (eval_on_start) is one; loading the best checkpoint after the loop
    (load_best_model_at_end) is train_end's, not the last evaluation's."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload = torch transformers\n")
    pytester.makepyfile(flow=FLOW, test_flow=FLOW_TESTS)
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=2)


SEVERAL = '''
"""A runner whose Trainers the case shapes: callbacks on one meter passed twice, Trainers one after another, a
callback of the user's that asks for an evaluation."""
import tempfile

from gpu_budget import meter_callback


def run(ctx):
    import torch
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments

    class AskForEvaluation(TrainerCallback):  # listed after the meter's callback, as users add theirs
        def on_step_end(self, args, state, control, **kwargs):
            control.should_evaluate = control.should_evaluate or state.global_step == 1

    p, ended = ctx.params, []
    ctx.meter.start("train_setup")
    with tempfile.TemporaryDirectory() as out:
        for _ in range(p["trainers"]):
            torch.manual_seed(0)
            model = BertForSequenceClassification(BertConfig(
                vocab_size=128, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                max_position_embeddings=32, num_labels=2))
            rows = [{"input_ids": ids, "labels": i % 2} for i, ids in enumerate(torch.randint(0, 128, (4, 16)))]
            args = TrainingArguments(out, per_device_train_batch_size=2, max_steps=2, use_cpu=True, report_to="none",
                                     logging_strategy="no", save_strategy="no", disable_tqdm=True)
            count = lambda: ended.append(1)  # noqa: E731
            callbacks = [meter_callback(ctx.meter, after_each=count) for _ in range(p["copies"])]
            callbacks += [AskForEvaluation()] if p["ask"] else []
            Trainer(model=model, args=args, train_dataset=rows, eval_dataset=rows[:2], callbacks=callbacks).train()
    return {"ended": len(ended)}
'''

SEVERAL_TESTS = '''
import pytest
from gpu_budget import Scenario

SEVERAL = Scenario(name="several", run="several:run", params={"trainers": 1, "copies": 1, "ask": False})


@pytest.mark.gpu_budget
def test_passed_twice(gpu_budget):
    row = gpu_budget.measure(SEVERAL.with_params(copies=2))
    assert list(row.phases) == ["train_setup", "train_step_1", "train_step_2", "train_end"]
    assert row.info["ended"] == 2  # after_each once a step, not once a callback


@pytest.mark.gpu_budget
def test_two_trainers(gpu_budget):
    row = gpu_budget.measure(SEVERAL.with_params(trainers=2))
    assert list(row.phases) == ["train_setup", "train_step_1", "train_step_2", "train_end",
                                "train_step_3", "train_step_4", "train_end (2)"]
    assert [s.step for s in row.steps] == [1, 2, 3, 4]


@pytest.mark.gpu_budget
def test_an_evaluation_a_users_callback_asks_for(gpu_budget):
    row = gpu_budget.measure(SEVERAL.with_params(ask=True))
    assert list(row.phases) == ["train_setup", "train_step_1", "eval_step_1", "train_step_2", "train_end"]
'''


def test_callbacks_on_one_meter_and_trainers_one_after_another(pytester, monkeypatch):
    """The meter's callback passed twice starts each phase once; a second Trainer's steps go on from the first's
    (train_step_1 again would repeat the series' step numbers); an evaluation a callback listed after the meter's
    asks for in on_step_end is a phase of its own, not the step's."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload = torch transformers\n")
    pytester.makepyfile(several=SEVERAL, test_several=SEVERAL_TESTS)
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=3)
