"""S4 as its user ran it: TRL's SFTTrainer on the 8-bit LoRA model in a ModelWrap, the script unchanged as a command.

test_s4_wrap_order.py gates a runner written here that imitates the write-up
with the HF Trainer; this module runs the tool the write-up names
(s4_wrap_order/sft_train.py, trl's SFTTrainer) on the same tiny checkpoint, so a
claim about the wrap order is checked on TRL itself. What running it showed:
SFTTrainer reads attributes of the model it is given (config,
generation_config, ...), so a wrapper that trains under TRL hands on what it
lacks, and then the Trainer can enable gradient checkpointing through it
(SFTConfig asks for it by default). The write-up's fix as written, PEFT first
and the wrapper outside, is refused by the Trainer: the outermost object is not
a PeftModel, yet it reports an 8-bit model, and transformers will not fine-tune
a "purely quantized" model.

Gated by their baselines alone (no budget: the write-up's figures are an 80 GB
card's). Tiny scale on the CPU; on a GPU the script trains on CUDA.
"""

import pytest
from s4_wrap_order.scenarios import SFT_TRAINER

pytest.importorskip("trl", reason="trl is in the scenarios extra: pip install -e '.[scenarios]'")


@pytest.mark.gpu_budget
def test_sft_as_reported(gpu_budget):
    """Wrapped, then PEFT, with SFTConfig's default gradient checkpointing, which the wrapper hands on."""
    row = gpu_budget.measure(SFT_TRAINER, label="sft-as-reported")
    assert row.info["exit_code"] == 0 and len(row.measurement.steps) == SFT_TRAINER.params_for("tiny")["steps"]


@pytest.mark.gpu_budget
def test_sft_without_checkpointing(gpu_budget):
    """The same with checkpointing off: what a wrapper that hides the model's methods leaves (the runner's case)."""
    row = gpu_budget.measure(SFT_TRAINER.with_params(gradient_checkpointing="off"), label="sft-no-checkpointing")
    assert row.info["exit_code"] == 0


def test_sft_fix_as_written_is_refused(gpu_budget):
    """get_peft_model first, then the wrapper: the Trainer refuses to fine-tune what looks like a quantized model."""
    m = gpu_budget.peak(SFT_TRAINER.with_params(order="peft_first"))
    assert not m.ok and m.error.kind == "exit", m.error
    assert "You cannot perform fine-tuning on purely quantized models" in m.error.message + str(m.info), m.error
