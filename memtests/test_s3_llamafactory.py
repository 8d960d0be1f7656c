"""S3 as its user ran it: LLaMA-Factory's `llamafactory-cli train`, in an environment of its own, beside the runner.

test_s3_qwen2_audio.py gates a runner written here that imitates what
LLaMA-Factory does after new tokens (the whole embedding and output matrices
trained beside LoRA, `modules_to_save`). This module runs LLaMA-Factory itself
(s3_qwen2_audio/tool.py: its CLI unchanged, a config and an audio dataset in
its formats, the runner's tiny checkpoint with a processor), so that claim is
checked on the tool. A probe (`--gpu-budget-probes`): the first run makes the
environment (LLaMA-Factory 0.9.3 and the releases it pins, laid over the
running environment), and one run of the tool takes about a minute on a 2-core
CPU; it runs twice, its peak moving from run to run. Its figures go to
FINDINGS.md as a note, from a committed report.

On a CPU host both train the full-precision model: LLaMA-Factory's
transformers (4.52) refuses 4-bit there, so the runner is set beside it
without 4-bit too. On CUDA both load the model in 4-bit.
"""

import pytest
from s3_qwen2_audio.scenarios import AS_REPORTED
from s3_qwen2_audio.tool import LLAMAFACTORY

MiB = 2**20


def training(phases) -> float:
    """MiB the optimizer steps add over the phase before the first step: the training's own."""
    names = list(phases)
    first = names.index(next(n for n in names if n.startswith("train_step_")))
    steps = [p.ram_tree_peak for name, p in phases.items() if name.startswith("train_step_")]
    return (max(steps) - phases[names[first - 1]].ram_tree_peak) / MiB


@pytest.mark.gpu_budget_probe  # the environment and minutes of CPU: a finding for FINDINGS.md, not a verdict
def test_llamafactory_beside_the_runner(gpu_budget):
    """LLaMA-Factory trains the new tokens as the runner's as-reported does: the whole embedding and output matrices
    beside LoRA. The tool twice and the runner once, unjudged; the note sets their peaks (with the phase each was in)
    and what their steps add side by side."""
    steps = LLAMAFACTORY.params_for("tiny")["steps"]
    tools = [gpu_budget.peak(LLAMAFACTORY) for _ in range(2)]
    for tool in tools:
        assert tool.ok and tool.info["exit_code"] == 0, tool.error
        assert len(tool.steps) == steps, [s.step for s in tool.steps]  # the gate's hook marks its Trainer's steps
    cuda = tools[0].peaks.vram_allocated is not None
    runner = gpu_budget.peak(AS_REPORTED if cuda else AS_REPORTED.with_params(load_in_4bit=False))
    assert runner.ok and runner.info["embedding_training"] == "modules_to_save", runner.info
    runs = {**{f"llamafactory 0.9.3, run {i}": m for i, m in enumerate(tools, 1)}, "runner as reported": runner}
    peak = {name: (m.peaks.ram_tree / MiB, peak_phase(m.phases)) for name, m in runs.items()}
    added = {name: training(m.phases) for name, m in runs.items()}
    assert all(mib > 0 for mib in added.values()), added
    gpu_budget.note(LLAMAFACTORY, f"{'4-bit' if cuda else 'full precision (4-bit is CUDA-only under its transformers)'}"
                    ", host RAM tree peak (MiB, in phase): "
                    + ", ".join(f"{k} {mib:.1f} ({phase})" for k, (mib, phase) in peak.items())
                    + "; what the optimizer steps add over the setup (MiB): "
                    + ", ".join(f"{k} {v:+.1f}" for k, v in added.items()),
                    peak_mib={k: round(mib, 1) for k, (mib, _) in peak.items()},
                    added_mib={k: round(v, 1) for k, v in added.items()})


def peak_phase(phases) -> str:
    return max(phases.items(), key=lambda kv: kv[1].ram_tree_peak)[0]
