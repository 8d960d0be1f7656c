"""S1: wav2vec2 bird-sound classifier, host RAM past Colab's 12.7 GB (seed 000).

The write-up does not give clip lengths; bird recordings run long, and its
first fix is `max_length = sampling_rate * max_seconds` with truncation, so
"as reported" feeds untruncated long clips: 50 s at real scale, where the peak
grows faster than linearly with clip length (measured after one step: 4.0 GiB
at 15 s, 7.5 GiB at 30 s; 2.6 GiB at 5 s).

Tiny budget: the real 12.7 GiB sits between untruncated 50 s clips and clips
truncated to 5 s (~2.7 GiB). The tiny model keeps the conv feature encoder,
whose activations scale with audio length, over a ~420 MiB process base:
untruncated 30 s clips peak at 869.8 MiB, truncated to 5 s at 504.4 MiB
(steady allocator; fresh sessions repeated every S1 case within 2 MiB). 690 MiB, the
middle of that gap, sits between the two the same way.

Every other fix the write-up proposes is measured on the as-reported
configuration and gated against its own baseline; FINDINGS.md gives each
one's saving and verdict.
"""

import pytest
from s1_scenarios import AS_REPORTED

FIXED = AS_REPORTED.with_fixes("truncate")
BUDGET = {"ram": {"tiny": "690 MiB", "real": "12.7 GiB"}}

FIXES = {  # fix(es) -> a fact that shows the fix took effect
    "lazy_data": lambda i: i["dataset_materialised_mib"] == 0,
    "freeze_feature_encoder": lambda i: i["trainable_params"] < i["total_params"],
    "lora": lambda i: i["trainable_params"] < 0.2 * i["total_params"],
    "lora+freeze_feature_encoder": lambda i: i["trainable_params"] < 0.2 * i["total_params"],
    "gradient_checkpointing": lambda i: i["gradient_checkpointing_active"],
    "gc_collect": lambda i: True,
    "low_cpu_mem_usage": lambda i: i["low_cpu_mem_usage_passed"],
    "lora+load_in_8bit": lambda i: i["quantized_linears"] > 0,
    "lora+load_in_4bit": lambda i: i["quantized_linears"] > 0,
}
CASES = {fixes: AS_REPORTED.with_fixes(*fixes.split("+")) for fixes in FIXES}  # validated at collection


@pytest.mark.gpu_budget(**BUDGET, expect="over-budget")
def test_as_reported(gpu_budget):
    info = gpu_budget.measure(AS_REPORTED, label="as-reported")["info"]
    assert info["mismatched_keys"] == ["classifier.bias", "classifier.weight"]  # the new head, as reported
    assert info["mixed_precision_active"] is False  # fp16=True does nothing on a CPU


@pytest.mark.gpu_budget(**BUDGET)
def test_fixed_truncate(gpu_budget):
    info = gpu_budget.measure(FIXED, label="truncate")["info"]
    assert info["train_input_seconds_max"] == 5


@pytest.mark.parametrize("fixes", list(FIXES))
def test_fix(gpu_budget, fixes):
    info = gpu_budget.measure(CASES[fixes], label=fixes)["info"]
    assert FIXES[fixes](info), info
