"""Which phase holds the loading of a Trainer step's batches, and its checkpoint saving (a real Trainer, a tiny BERT):
the phase before the step, an evaluation's where one follows the step before, as the docs say."""

from pathlib import Path

import pytest

from gpu_budget.measure import hf_trainer

pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]

RUNNER = '''
import tempfile

import gpu_budget

SCRATCH = 64 * 2**20


def collate(rows):
    """Builds a batch; a training batch (2 rows, an evaluation's are 4) holds a scratch of SCRATCH bytes meanwhile."""
    import torch

    if len(rows) == 2:
        torch.ones(SCRATCH, dtype=torch.uint8)
    return {"input_ids": torch.stack([r["input_ids"] for r in rows]), "labels": torch.tensor([r["labels"] for r in rows])}


def run(ctx):
    import torch
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

    saved_in = []

    class Watched(Trainer):
        def _save_checkpoint(self, *args, **kwargs):
            saved_in.append(ctx.meter.open_phase[0])
            return super()._save_checkpoint(*args, **kwargs)

    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(
        vocab_size=128, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=32, num_labels=2))
    rows = [{"input_ids": ids, "labels": i % 2} for i, ids in enumerate(torch.randint(0, 128, (16, 16)))]
    ctx.meter.start("train_setup")
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(out, max_steps=4, per_device_train_batch_size=2, per_device_eval_batch_size=4,
                                 eval_strategy="steps", eval_steps=2, save_strategy="steps", save_steps=2,
                                 use_cpu=True, report_to="none", logging_strategy="no", disable_tqdm=True)
        Watched(model=model, args=args, train_dataset=rows, eval_dataset=rows[:4], data_collator=collate,
                callbacks=[gpu_budget.meter_callback(ctx.meter)]).train()
    return {"saved_in": saved_in}
'''

TESTS = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget
def test_loading(gpu_budget):
    m = gpu_budget.peak(Scenario(name="loading", run="runner:run"))
    assert list(m.phases) == ["train_setup", "train_step_1", "train_step_2", "eval_step_2", "train_step_3",
                              "train_step_4", "eval_step_4", "train_end"]
    peak = {name: p.ram_peak for name, p in m.phases.items()}
    loads = {name for name in list(peak)[1:] if peak[name] > peak["train_step_2"] + 48 * 2**20}
    assert loads == {"train_step_1", "eval_step_2", "train_step_3"}  # step 2's to step 4's batches
    assert m.info["saved_in"] == ["eval_step_2", "eval_step_4"]
'''


def test_the_next_steps_batches_load_in_the_phase_before_it_an_evaluations_where_one_follows(pytester, monkeypatch):
    """Step 3's training batch is built in eval_step_2, after the evaluation that follows step 2, not in step 2's
    phase; the checkpoint saved at steps 2 and 4 is in the evaluations' phases."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload = torch transformers\n")
    pytester.makepyfile(runner=RUNNER, test_loading=TESTS)
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=1)


def test_the_docs_say_where_the_loading_is():
    """They said step k's phase holds step k+1's loading, which is so only where no evaluation follows step k."""
    doc = " ".join(hf_trainer.meter_callback.__doc__.split())
    page = " ".join((ROOT / "docs" / "scenario-api.md").read_text().split())
    assert ("k's phase also holds the loading of step k+1's batches, and where an evaluation follows step k, that "
            "evaluation's phase holds them instead, with the checkpoint saved after it") in doc
    assert ("step k's phase also holds step k+1's loading, or, where an evaluation follows step k, that evaluation's "
            "phase does, with the checkpoint saved after it") in page
