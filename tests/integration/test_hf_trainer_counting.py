"""Step and epoch numbers a Trainer's phases go on from, where something else marked before it (a real Trainer, a
tiny BERT): the runner's own marks, an earlier Trainer, a script's own gpu_budget.step() in a gated command."""

import pytest

pytest.importorskip("transformers")

RUNNER = '''
"""Tiny BERT Trainers, shaped by the case: steps the runner marks by hand first, Trainers one after another, a
TrainerCallback of the user's that marks each step with gpu_budget.step()."""
import tempfile

import gpu_budget
from gpu_budget import meter_callback


def run(ctx):
    import torch
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments

    class Mine(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            gpu_budget.step()

    p = ctx.params
    rows = [{"input_ids": ids, "labels": i % 2} for i, ids in enumerate(torch.randint(0, 128, (4, 16)))]
    for k in range(1, p["by_hand"] + 1):
        ctx.meter.start(f"train_step_{k}", step=k)
    ctx.meter.start("train_setup")
    with tempfile.TemporaryDirectory() as out:
        for _ in range(p["trainers"]):
            torch.manual_seed(0)
            model = BertForSequenceClassification(BertConfig(
                vocab_size=128, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                max_position_embeddings=32, num_labels=2))
            args = TrainingArguments(out, per_device_train_batch_size=2, num_train_epochs=1, use_cpu=True,
                                     eval_strategy=p["eval"], report_to="none", logging_strategy="no",
                                     save_strategy="no", disable_tqdm=True)  # 2 optimizer steps
            Trainer(model=model, args=args, train_dataset=rows, eval_dataset=rows[:2],
                    callbacks=[meter_callback(ctx.meter)] + ([Mine()] if p["mine"] else [])).train()
'''

SCRIPT = '''
"""A script run as a command: steps it marks by hand, then a Trainer the gate's callback meters, with a callback of
its own that marks each step too (argv[2] "mine")."""
import sys
import tempfile

import gpu_budget
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments


class Mine(TrainerCallback):
    def on_step_begin(self, args, state, control, **kwargs):
        gpu_budget.step()


for _ in range(int(sys.argv[1])):
    gpu_budget.step()
gpu_budget.phase("build")
torch.manual_seed(0)
model = BertForSequenceClassification(BertConfig(
    vocab_size=128, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
    max_position_embeddings=32, num_labels=2))
rows = [{"input_ids": ids, "labels": i % 2} for i, ids in enumerate(torch.randint(0, 128, (4, 16)))]
with tempfile.TemporaryDirectory() as out:
    args = TrainingArguments(out, per_device_train_batch_size=2, max_steps=2, use_cpu=True, report_to="none",
                             logging_strategy="no", save_strategy="no", disable_tqdm=True)
    Trainer(model=model, args=args, train_dataset=rows, callbacks=[Mine()] if sys.argv[2:] == ["mine"] else []).train()
'''

TESTS = '''
import sys

import pytest
from gpu_budget import Scenario

RUN = Scenario(name="counting", run="runner:run", params={"by_hand": 0, "trainers": 1, "eval": "no", "mine": False})


@pytest.mark.gpu_budget
def test_after_steps_marked_by_hand(gpu_budget):
    row = gpu_budget.measure(RUN.with_params(by_hand=1))
    assert list(row.phases) == ["train_step_1", "train_setup", "train_step_2", "train_step_3", "train_end"]
    assert [s.step for s in row.steps] == [1, 2, 3]


@pytest.mark.gpu_budget
def test_a_script_after_steps_marked_by_hand(gpu_budget):
    row = gpu_budget.measure(Scenario(name="script", command=[sys.executable, "script.py", "1"]))
    assert list(row.phases) == ["run", "train_step_1", "build", "train_setup", "train_step_2", "train_step_3", "train_end"]


@pytest.mark.gpu_budget
def test_a_scripts_own_step_in_its_callback(gpu_budget):
    row = gpu_budget.measure(Scenario(name="mine", command=[sys.executable, "script.py", "0", "mine"]))
    assert list(row.phases) == ["run", "build", "train_setup", "train_step_1", "train_step_2", "train_end"]


@pytest.mark.gpu_budget
def test_a_runners_own_step_in_its_callback(gpu_budget):
    row = gpu_budget.measure(RUN.with_params(mine=True))
    assert list(row.phases) == ["train_setup", "train_step_1", "train_step_2", "train_end"]


@pytest.mark.gpu_budget
def test_a_second_trainers_epochs(gpu_budget):
    row = gpu_budget.measure(RUN.with_params(trainers=2, eval="epoch"))
    assert list(row.phases) == ["train_setup", "train_step_1", "train_step_2", "eval_epoch_1", "train_end",
                                "train_step_3", "train_step_4", "eval_epoch_2", "train_end (2)"]
'''


@pytest.fixture
def project(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)  # the inner run records its baselines
    pytester.makeini("[pytest]\ngpu_budget_preload = torch transformers\n")
    pytester.makepyfile(runner=RUNNER, script=SCRIPT, test_counting=TESTS)
    return pytester


def test_a_trainer_goes_on_from_the_steps_marked_before_it(project):
    """Steps a runner or a script marked itself are counted: the Trainer's first is not a second step 1; and a
    gpu_budget.step() of the user's own in a step a Trainer's callback began is that step, not another; a second
    Trainer's evaluations each epoch go on from the first's epochs."""
    project.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=5)
