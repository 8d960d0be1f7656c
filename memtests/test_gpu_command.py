"""A user's own fine-tune gated on the GPU as they run it: S1's Trainer script, and a 2-rank DDP launch. CUDA only.

The GPU half of "gate your own fine-tune": the script and the launcher run
unchanged as commands, and their GPU figures (the caching allocator's peaks
and NVML's, per phase and per step, per rank) come from the gate's hook in
their own processes (docs/declaring.md, "Gate your training script").

- S1's Trainer script (s1_wav2vec2/train.py, as test_s1_script.py runs it) on
  the GPU for 10 optimizer steps, under a VRAM budget and the real run's length
  (steps=), so a leak is judged by its slope over the steps as well as by its
  peak. GPU_BUDGET_PLANT_LEAK_MIB=1.5 makes the script keep 1.5 MiB of each
  training step's hidden states on the GPU (its --keep_hidden_mib): the
  planted leak the GPU kit's `command` part runs against the clean run's
  baselines (benchmarks/gpu_validation.sh).
- several_ranks/train.py under torchrun on 2 ranks sharing one GPU over gloo
  (NCCL refuses two ranks on one device), so the per-rank GPU path runs on a
  one-GPU host.

Budgets (origin "chosen"): 1 GiB of allocated memory per process at tiny
scale, far above what either case holds; what the cases test on the GPU is
their baselines and the leak's projection to 10,000 steps. On a host without
CUDA both skip with the reason (device="cuda"); under
--gpu-budget-require-gpu that is an error.
"""

import os
from dataclasses import replace

import pytest
from several_ranks.scenarios import DDP
from test_s1_script import SCRIPT

LEAK_MIB = float(os.environ.get("GPU_BUDGET_PLANT_LEAK_MIB", "0"))  # the kit's planted leak; 0: none
BUDGET = {"vram": {"tiny": "1 GiB"}, "origin": {"tiny": "chosen"}, "device": "cuda"}

TRAINER_SCRIPT = replace(
    SCRIPT, name="s1_wav2vec2_script_gpu", command=(*SCRIPT.command, "--keep_hidden_mib", "{keep_hidden_mib}"),
    params={**SCRIPT.params, "keep_hidden_mib": LEAK_MIB}, supports=()).with_params(max_steps=10)
DDP_ONE_GPU = replace(DDP, name="several_ranks_one_gpu", command=(*DDP.command, "--backend", "gloo"), gpus=1)


@pytest.mark.gpu_budget(**BUDGET, steps={"tiny": 10_000})
def test_trainer_script_on_the_gpu(gpu_budget):
    """The unchanged Trainer script on CUDA: allocated, reserved and NVML figures per step, judged on allocated."""
    row = gpu_budget.measure(TRAINER_SCRIPT, label="script")
    assert row.info["exit_code"] == 0 and [s.step for s in row.steps] == list(range(1, 11)), row.steps
    for name, phase in row.phases.items():  # what a process holds on its GPU: allocated <= reserved <= NVML
        if phase.get("vram_device") is not None:
            assert phase.vram_allocated <= phase.vram_reserved <= phase.vram_device, (name, phase)


@pytest.mark.gpu_budget(**BUDGET)
def test_ddp_two_ranks_on_one_gpu(gpu_budget):
    """torchrun, 2 ranks on one GPU over gloo: each rank's GPU figures, its budget, the node's summed NVML figure."""
    row = gpu_budget.measure(DDP_ONE_GPU, label="ddp-gloo")
    assert row.info["world"] == 2 and row.info["groups"] == {"0": 2, "1": 2}, row.info
    assert all(r.peaks.vram_allocated for r in row.ranks), row.ranks
