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

