"""The estimator follows the path the real run takes: its step count, transformers' mask, CUDA's GQA kernel.

Each was a miss at the write-ups' real scale (docs/estimator-cuda.md): a one-step run estimated with a second
step's optimizer state; an all-ones attention mask materialised on fake tensors where a real run passes none;
grouped-query keys and values kept expanded where CUDA's flash kernel reads them in place.
"""

import pytest

torch = pytest.importorskip("torch")

from torch import nn

from gpu_budget.estimate import StepPlan, adamw, estimate
from gpu_budget.estimate import cuda as cuda_mode
from gpu_budget.estimate.cuda import Device
from gpu_budget.estimate.fake import fake_world, known_batch
from gpu_budget.estimate.tracker import LiveTensors


def mlp(p, fixes, device, known):
    """Two Linear layers, AdamW; p["run_steps"]: the run's own optimizer steps."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    batch = known_batch(known, lambda: {"x": torch.randn(1024, 64, generator=torch.Generator().manual_seed(1)),
                                        "y": torch.randint(0, 10, (1024,))})
    return StepPlan(model, adamw(model.parameters(), device, lr=1e-3), [batch], run_steps=p.get("run_steps"),
                    loss=lambda m, b: nn.functional.cross_entropy(m(b["x"]), b["y"]))


def test_a_run_that_stops_after_one_step_is_estimated_for_that_step():
    """max_steps=1: the forward never holds AdamW's state, which a second step's forward would."""
    two, one = estimate(mlp, {}), estimate(mlp, {"run_steps": 1})
    assert one.steps == 1 and two.steps == 2
    assert not any(p.name.startswith("step2") for p in one.phases)
    assert one.step_peak == one.first_step_peak == two.first_step_peak < two.step_peak
    assert estimate(mlp, {"run_steps": 5}).step_peak == two.step_peak  # more steps than estimated: as before


def llama(p, fixes, device, known):
    """A tiny GQA Llama (4 query heads, 2 key/value heads) on an all-ones attention mask, as a runner feeds it."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    config._attn_implementation = "sdpa"
    model = LlamaForCausalLM(config)

    def make():
        ids = torch.randint(0, 256, (2, 128), generator=torch.Generator().manual_seed(1))
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}

    return StepPlan(model, adamw(model.parameters(), device, lr=1e-3), [known_batch(known, make)])


def test_an_all_ones_mask_takes_the_real_runs_path_on_fake_tensors():
    """transformers takes a fake tensor for a traced one and would materialise the 4D causal mask a real run
    skips (SDPA's is_causal instead): the fake estimate is the real CPU tensor peak, phase by phase."""
    pytest.importorskip("transformers")
    fake, real = estimate(llama, {}), estimate(llama, {}, fake=False)
    assert [(r.name, r.peak) for r in fake.phases] == [(r.name, r.peak) for r in real.phases]
    assert fake.at_peak == real.at_peak


def test_cuda_gqa_without_a_mask_keeps_the_unexpanded_key_and_value():
    """CUDA's flash kernel reads the key/value heads in place: a forward keeps its output and logsumexp, not an
    expanded copy of key and value; backward gives key and value gradients of their own shape."""
    b, heads, kv_heads, length, dim = 2, 8, 2, 64, 32
    with fake_world(), cuda_mode.modelled(Device(cuda=True)), LiveTensors() as tracker:
        q = torch.randn(b, heads, length, dim, requires_grad=True)
        k, v = (torch.randn(b, kv_heads, length, dim, requires_grad=True) for _ in range(2))
        tracker.phase("forward")
        out = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        tracker.phase("backward")
        out.sum().backward()
        shapes = out.shape, k.grad.shape, v.grad.shape
    forward = next(p for p in tracker.replay().phases if p.name == "forward")
    assert forward.peak - forward.start == 4 * b * heads * length * (dim + 1)  # output + float32 logsumexp
    assert shapes == ((b, heads, length, dim), k.shape, v.shape)


def test_cuda_attention_bias_that_needs_a_gradient_is_estimated():
    """A learned position bias passed as the mask (T5's) runs on CUDA's memory-efficient kernel: the estimate used
    to stop at CPU's flash op, which refuses a mask that needs a gradient. Forward keeps output + logsumexp;
    backward writes the bias gradient at B x H x L x S, summed to the bias's own shape."""
    b, heads, length, dim = 2, 4, 64, 16
    with fake_world(), cuda_mode.modelled(Device(cuda=True)), LiveTensors() as tracker:
        q, k, v = (torch.randn(b, heads, length, dim, requires_grad=True) for _ in range(3))
        bias = torch.randn(1, heads, length, length, requires_grad=True)
        tracker.phase("forward")
        out = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        tracker.phase("backward")
        out.sum().backward()
        shapes = out.shape, bias.grad.shape
    phases = {p.name: p for p in tracker.replay().phases}
    assert phases["forward"].peak - phases["forward"].start == 4 * b * heads * length * (dim + 1)
    assert phases["backward"].peak - phases["backward"].start >= 4 * b * heads * length * length  # the bias grad
    assert shapes == ((b, heads, length, dim), bias.shape)


def test_fewer_steps_than_asked_are_said():
    """A run that stops early is estimated for its own steps; asked for more (--steps 5), the estimate used to give
    fewer without a word: its notes say how many it took and why."""
    capped = estimate(mlp, {"run_steps": 2}, steps=5)
    assert capped.steps == 2
    assert capped.notes == ["the run stops after 2 optimizer steps (StepPlan.run_steps): 2 estimated, not 5"]
    assert estimate(mlp, {"run_steps": 5}, steps=3).notes == []  # the run takes all the steps asked: nothing to say
