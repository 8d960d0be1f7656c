"""The estimator: fake tensors predict the real live-tensor peak exactly; CUDA mode changes what it should.

Real torch, small models (seconds). The reference is the same step on real
CPU tensors under the same tracker, which is a measurement of live tensor
bytes; no RSS is involved, so the comparisons are exact.
"""

import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torch import nn

from gpu_budget import Scenario
from gpu_budget.estimate import StepPlan, adamw, estimate, estimate_scenario
from gpu_budget.estimate.cases import CaseError, load_case
from gpu_budget.estimate.cli import main as cli
from gpu_budget.estimate.cuda import Device
from gpu_budget.estimate.fake import EstimateError, fake_world, known_batch, known_tensor, outside
from gpu_budget.estimate.quant import quantize, quantized_bytes
from gpu_budget.estimate.tracker import LiveTensors

MiB = 2**20
S5_SPEC = str(Path(__file__).resolve().parents[2] / "memtests" / "s5_generic_oom" / "scenarios.py") + ":S5"


def mlp(p, fixes, device, known):
    """A small MLP with LayerNorm and dropout, AdamW, two micro-batches."""
    torch.manual_seed(0)
    width = p["width"]
    model = nn.Sequential(nn.Linear(p["inputs"], width), nn.LayerNorm(width), nn.GELU(), nn.Dropout(p["dropout"]),
                          nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))
    if "freeze_first" in fixes:
        model[0].requires_grad_(False)

    def make():
        g = torch.Generator().manual_seed(1)
        return {"x": torch.randn(p["batch"], p["inputs"], generator=g), "y": torch.randint(0, 10, (p["batch"],))}

    batches = [known_batch(known, make) for _ in range(p["micro"])]
    trainable = [q for q in model.parameters() if q.requires_grad]
    return StepPlan(model, adamw(trainable, device, lr=1e-3), batches,
                    loss=lambda m, b: nn.functional.cross_entropy(m(b["x"]), b["y"]), max_grad_norm=1.0)


PARAMS = {"width": 512, "inputs": 256, "batch": 64, "micro": 2, "dropout": 0.1}


@pytest.mark.parametrize("fixes", [(), ("freeze_first",)])
def test_fake_step_peak_equals_the_real_live_tensor_peak(fixes):
    fake = estimate(mlp, PARAMS, fixes)
    real = estimate(mlp, PARAMS, fixes, fake=False)
    assert fake.step_peak == real.step_peak
    assert fake.at_peak == real.at_peak
    assert [(r.name, r.peak) for r in fake.phases] == [(r.name, r.peak) for r in real.phases]
    assert fake.at_peak["optimizer_state"] > 0 and fake.at_peak["parameters"] > 0


def test_categories_are_the_tensors_they_name():
    est = estimate(mlp, {**PARAMS, "micro": 1}, ())
    params = sum(q.numel() * 4 for q in nn.Sequential(
        nn.Linear(256, 512), nn.LayerNorm(512), nn.Linear(512, 512), nn.Linear(512, 10)).parameters())
    end = next(r for r in est.phases if r.name == "end")
    assert end.at_peak["parameters"] == params
    assert end.at_peak["optimizer_state"] == 2 * params + 4 * 8  # exp_avg, exp_avg_sq, and 8 fp32 step counters
    assert end.at_peak["gradients"] == 0  # zero_grad(set_to_none=True)


def test_the_tracker_counts_storages_once_and_frees_them():
    with LiveTensors() as tracker:
        tracker.phase("a")
        x = torch.empty(MiB, dtype=torch.uint8)
        view = x[: MiB // 2]  # a view: no new storage
        tracker.phase("b")
        del x, view
        y = torch.empty(3 * MiB, dtype=torch.uint8)
        tracker.label([y], "gradients")
        del y
    replay = tracker.replay()
    assert [(r.name, r.peak) for r in replay.phases] == [("a", MiB), ("b", 3 * MiB)]
    assert replay.at_peak["gradients"] == 3 * MiB and replay.final == 0


def test_cuda_mode_keeps_a_bool_dropout_mask_and_rounds_to_512():
    p = {**PARAMS, "micro": 1, "batch": 64, "width": 1000}
    cpu, cuda = estimate(mlp, p, ()), estimate(mlp, p, (), device=Device(cuda=True, cublas_workspace=0))
    cpu_forward, cuda_forward = (next(r.peak for r in est.phases if r.name == "step1.forward")
                                 for est in (cpu, cuda))
    # CPU dropout keeps a float32 mask (4 bytes an element) for backward, CUDA's fused kernel a bool (1 byte)
    assert cpu_forward - cuda_forward >= 3 * 64 * 1000 - 4096
    assert cuda.metric == "vram_allocated_estimate" and cpu.metric == "ram_tensor_estimate"
    assert all(r.peak % 512 == 0 for r in cuda.phases)


def convs(p, fixes, device, known):
    """Convolutions only: no matmul, so no cuBLAS workspace."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 8, 3))
    batch = known_batch(known, lambda: {"x": torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(1))})
    return StepPlan(model, adamw(model.parameters(), device, lr=1e-3), [batch], loss=lambda m, b: m(b["x"]).mean())


def test_cuda_mode_counts_one_cublas_workspace_per_thread_that_runs_a_matmul():
    """torch gives the forward's thread and autograd's backward thread a cuBLAS workspace each, at their first
    matmul, from the caching allocator (max_memory_allocated counts them); nothing else changes."""
    p = {**PARAMS, "micro": 1}
    bare = estimate(mlp, p, (), device=Device(cuda=True, cublas_workspace=0))
    for size in (None, 8320 * 1024):  # torch's default from compute capability 9, and before it
        est = estimate(mlp, p, (), device=Device(cuda=True, cublas_workspace=size))
        one = size or 32 * MiB
        assert est.at_peak["workspaces"] == 2 * one and est.step_peak == bare.step_peak + 2 * one
        added = {r.name: r.peak - b.peak for r, b in zip(est.phases, bare.phases)}
        assert added["build"] == 0 and added["step1.forward"] == one  # the backward thread's comes later
        assert all(v == 2 * one for name, v in added.items() if name not in ("build", "step1.forward"))
    assert estimate(mlp, p, ()).at_peak["workspaces"] == 0  # a CPU has none
    no_matmul = estimate(convs, {}, (), device=Device(cuda=True))
    assert no_matmul.at_peak["workspaces"] == 0
    assert no_matmul.step_peak == estimate(convs, {}, (), device=Device(cuda=True, cublas_workspace=0)).step_peak


def normed(p, fixes, device, known):
    """Linear -> LayerNorm -> Linear, optionally checkpointed, trained under CUDA's autocast when p["autocast"]."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU() if "no_norm" in fixes else nn.LayerNorm(512), nn.Linear(512, 10))
    rows = p.get("rows", 64)
    batch = known_batch(known, lambda: {"x": torch.randn(rows, 256, generator=torch.Generator().manual_seed(1)),
                                        "y": torch.randint(0, 10, (rows,))})

    def loss(m, b):
        from torch.utils.checkpoint import checkpoint

        hidden = checkpoint(m[:2], b["x"], use_reentrant=False) if "checkpoint" in fixes else m[:2](b["x"])
        return nn.functional.cross_entropy(m[2](hidden), b["y"])

    return StepPlan(model, adamw(model.parameters(), device, lr=1e-3), [batch], loss=loss,
                    autocast=p.get("autocast"))


def test_cuda_autocast_saves_what_cuda_saves_and_casts_each_weight_once_per_forward():
    """Under CUDA's policies a linear reads fp16 copies (its weight cast once per forward and kept for backward)
    and LayerNorm reads fp32. Linear layers alone then hold less than in fp32; with the LayerNorm between them
    they hold more (its fp32 copy and output beside the fp16 ones), as CUDA's autocast does."""
    from gpu_budget.estimate.autocast import CudaAutocast

    cuda = Device(cuda=True, cublas_workspace=0)
    def forward(fixes, dtype):
        est = estimate(normed, {"autocast": dtype, "rows": 2048}, fixes, device=cuda)
        return next(r.peak for r in est.phases if r.name == "step2.forward")

    assert forward(("no_norm",), torch.float16) < forward(("no_norm",), None)
    assert forward((), torch.float16) > forward((), None)
    assert estimate(normed, {"autocast": torch.float16}, (), device=Device()).step_peak == \
        estimate(normed, {}, (), device=Device()).step_peak  # a CPU run: autocast is CUDA's, nothing changes

    model = nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8))
    with CudaAutocast(torch.float16) as mode:
        a, b = model[0](torch.randn(2, 8)), model[0](torch.randn(2, 8))
        normed_out = model[1](a)
        probs = torch.softmax(a, dim=-1)
        assert len(mode._cache) == 2  # weight and bias, cast once for both calls
    assert (a.dtype, b.dtype, normed_out.dtype, probs.dtype) == (torch.float16, torch.float16, torch.float32, torch.float32)
    assert not mode._cache  # the region's end drops the cast copies


def test_a_checkpoint_recomputes_under_the_forwards_autocast():
    """torch.utils.checkpoint replays the forward in its autocast state: the recompute's casts match the saved
    ones (else checkpoint raises), and after the forward a checkpoint holds less than keeping every activation:
    exactly the tensors the checkpointed Linear -> LayerNorm would have saved for backward."""
    from gpu_budget.estimate.step import run_step

    cuda, rows = Device(cuda=True, cublas_workspace=0), 64

    def after_forward(fixes):
        tracker, _, _ = run_step(normed, {"autocast": torch.float16, "rows": rows}, fixes, cuda, steps=1)
        return next(r.end for r in tracker.replay().phases if r.name == "step1.forward")

    saved = (rows * 256 * 2  # the fp16 copy of the input the Linear reads
             + rows * 512 * 4  # the fp32 copy of the Linear's fp16 output the LayerNorm reads
             + 2 * -(-rows * 4 // 512) * 512)  # LayerNorm's mean and rstd, each rounded up to 512-byte blocks
    assert after_forward(()) - after_forward(("checkpoint",)) == saved


def test_cuda_mode_replays_the_step_through_the_caching_allocator():
    """allocated_peak counts whole blocks (never less than the tensors), reserved_peak the segments (never less
    than allocated); a CPU estimate has neither (tests/unit/test_allocator_model.py checks the rules).

    A 19.5 MiB cuBLAS workspace per matmul thread (two per step) is a large request: its own segment rounded
    up to 20 MiB, and the 0.5 MiB left is not split off (1 MiB or less), so the whole block counts as allocated.
    The MLP's own tensors are all 1 MiB or less: small-pool blocks split at 512 bytes, packed into the fewest
    2 MiB segments that hold them."""
    p, workspace = {**PARAMS, "micro": 1}, 39 * MiB // 2
    cuda = estimate(mlp, p, (), device=Device(cuda=True, cublas_workspace=workspace))
    small = cuda.step_peak - 2 * workspace  # both workspaces are live at the step peak (never freed)
    assert cuda.allocated_peak == cuda.step_peak + 2 * (20 * MiB - workspace)
    assert cuda.reserved_peak == 2 * 20 * MiB + -(-small // (2 * MiB)) * 2 * MiB
    cpu = estimate(mlp, p, ())
    assert cpu.allocated_peak is None and cpu.reserved_peak is None


def varying(p, fixes, device, known):
    """An MLP whose run trains batches of 512, 64 and 256 rows in that order (StepPlan.sequence)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))

    def make(rows: int):
        return lambda: known_batch(known, lambda: {"x": torch.randn(rows, 256), "y": torch.randint(0, 10, (rows,))})

    return StepPlan(model, adamw(model.parameters(), device, lr=1e-3), [make(512)()],
                    loss=lambda m, b: nn.functional.cross_entropy(m(b["x"]), b["y"]),
                    sequence=[make(rows) for rows in (512, 64, 256)], empty_cache="empty_cache" in fixes,
                    notes=["dropout off"], batch_note="the step of the run's heaviest batch (512 rows)")


def test_as_run_trains_the_runs_own_steps_in_order_and_the_cache_can_shrink():
    """as_run: one step per batch of the sequence, each batch held only in its step (a small step after a large
    one holds less); without empty_cache reserved memory never shrinks, with it it can."""
    cuda = Device(cuda=True)
    kept = estimate(varying, {}, (), device=cuda, as_run=True)
    assert [s.step for s in kept.per_step] == [1, 2, 3]
    tensors = [s.tensors for s in kept.per_step]
    assert tensors[1] < tensors[2] < tensors[0]
    reserved = [s.reserved for s in kept.per_step]
    assert reserved == sorted(reserved)
    emptied = estimate(varying, {}, ("empty_cache",), device=cuda, as_run=True)
    assert emptied.per_step[1].reserved < kept.per_step[1].reserved
    assert [s.tensors for s in emptied.per_step] == tensors  # emptying the cache frees no tensor
    with pytest.raises(ValueError, match="StepPlan.sequence"):
        estimate(mlp, PARAMS, (), device=cuda, as_run=True)


def test_the_note_on_which_batch_is_stepped_says_what_ran_as_run():
    """The builder's heaviest-batch note holds where its batch is stepped; as the run goes, every batch takes its
    own step, and the estimate's notes say that instead."""
    heaviest = estimate(varying, {}, ())
    assert heaviest.notes == ["the step of the run's heaviest batch (512 rows)", "dropout off"]
    as_run = estimate(varying, {}, (), as_run=True)
    stepped = "the run's own 3 steps in order, each batch made at its step and dropped after it (as_run)"
    assert as_run.notes == [stepped, "dropout off"]


def test_cuda_context_is_only_added_to_the_device_figure():
    est = estimate(mlp, {**PARAMS, "micro": 1}, (), device=Device(cuda=True, cuda_context=300 * MiB))
    assert est.device_peak == est.step_peak + 300 * MiB
    assert estimate(mlp, {**PARAMS, "micro": 1}, (), device=Device(cuda=True)).device_peak is None


def test_known_values_answer_item_and_masks_and_unknown_ones_say_so():
    with fake_world() as known:
        with outside():
            ids = torch.tensor([3, 0, 7, 0, 1])
        fake_ids = known_tensor(known, ids)
        assert int((fake_ids > 0).sum()) == 3  # computed for real on the side
        picked = torch.randn(5, 4)[fake_ids > 0]
        assert picked.shape == (3, 4)  # exact: the mask's value is known
        weights = nn.Linear(5, 1).weight[0]  # a parameter: its values are never drawn for real
        assert torch.randn(5, 4)[weights > 0].shape == (5, 4)  # unknown mask: all-True, the most it could hold
        assert known.assumed
        with pytest.raises(EstimateError, match="fake tensors have no values"):
            float(weights.sum())


def test_a_batch_larger_than_the_side_computations_limit_keeps_its_known_values():
    """The batch is built for real (its size in host RAM, already held): its values stay known whatever its size, as
    do results no larger than it (transformers' `attention_mask.to(bool)`, then `.sum() == numel` on a long batch),
    where the estimate said they were "computed from weights". A result larger than both the batch and KNOWN_LIMIT
    is still not computed on the side."""
    from gpu_budget.estimate.fake import KNOWN_LIMIT

    with fake_world() as known:
        with outside():
            mask = torch.ones(KNOWN_LIMIT + 8, dtype=torch.bool)
        fake = known_tensor(known, mask)
        assert bool(fake.all()) and int(fake.sum()) == KNOWN_LIMIT + 8
        assert torch.randn(KNOWN_LIMIT + 8)[fake].shape == (KNOWN_LIMIT + 8,) and not known.assumed
        assert int(fake.to(torch.int8).logical_not().sum()) == 0  # as large as the batch: computed with it
        assert known.value(torch.cat([fake, fake])) is None  # larger than the batch: not computed for real


def moe(p, fixes, device, known):
    """A one-layer Mixtral of four experts: transformers runs its experts through torch's grouped matmul."""
    from transformers import MixtralConfig, MixtralForCausalLM

    torch.manual_seed(0)
    config = MixtralConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                           num_attention_heads=2, num_key_value_heads=1, num_local_experts=4, num_experts_per_tok=2)
    model = MixtralForCausalLM._from_config(config, dtype=getattr(torch, p["dtype"]))
    inputs = known_batch(known, lambda: {"input_ids": torch.arange(24).view(2, 12), "labels": torch.arange(24).view(2, 12)})
    return StepPlan(model, adamw(model.parameters(), device, lr=1e-4), [inputs])


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_a_mixture_of_experts_in_any_dtype_is_estimated_as_it_runs(dtype):
    """torch's fake kernel of _grouped_mm holds CUDA's old bf16-only check; its CPU kernel takes fp32 too, and a
    float32 MoE trains: the estimate follows it, byte for byte."""
    fake, real = estimate(moe, {"dtype": dtype}), estimate(moe, {"dtype": dtype}, fake=False)
    assert [(r.name, r.peak) for r in fake.phases] == [(r.name, r.peak) for r in real.phases]


def test_experts_run_one_by_one_are_refused_naming_the_implementation_that_is_estimated():
    """transformers' eager experts loop visits the experts the router picks (a value of the weights): the estimate
    cannot follow it, and said to set layerdrop=0, which no MoE has; it names the experts' implementation instead."""
    from transformers import MixtralConfig, MixtralForCausalLM

    config = MixtralConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                           num_attention_heads=2, num_key_value_heads=1, num_local_experts=4, num_experts_per_tok=2)
    config._experts_implementation = "eager"

    def eager(p, fixes, device, known):
        model = MixtralForCausalLM._from_config(config)
        batch = known_batch(known, lambda: {"input_ids": torch.arange(24).view(2, 12), "labels": torch.arange(24).view(2, 12)})
        return StepPlan(model, adamw(model.parameters(), device, lr=1e-4), [batch])

    with pytest.raises(EstimateError) as raised:
        estimate(eager, {})
    said = str(raised.value)
    assert "in forward" in said and "layerdrop" not in said
    assert "MixtralExperts runs its experts one by one (config._experts_implementation='eager')" in said
    assert "experts_implementation='grouped_mm'" in said


def test_a_value_the_estimate_cannot_know_is_named_where_the_code_read_it():
    """The line that read it, outside torch and the estimator: the user's own, or the library's they called."""
    with fake_world(), pytest.raises(EstimateError) as raised:
        weights = nn.Linear(5, 1).weight
        line = sys._getframe().f_lineno + 1
        float(weights.sum())
    assert f", read at tests/unit/test_estimate.py:{line} in test_a_value_the_estimate_cannot_know" in str(raised.value)


def test_resizing_a_vocabulary_with_mean_resizing_says_how_to_estimate_it():
    """resize_token_embeddings draws the new rows from the old rows' covariance, a value fake weights do not have:
    the error names transformers' function and the argument that leaves the step's memory as it was."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=32, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1)
    with fake_world(), pytest.raises(EstimateError) as raised:
        LlamaForCausalLM(config).resize_token_embeddings(35)
    said = str(raised.value)
    assert "read at transformers/modeling_utils.py:" in said and "_init_added_embeddings_weights_with_mean" in said
    assert "fake tensors have no values. Give resize_token_embeddings(..., mean_resizing=False)" in said


def test_a_7b_sized_layer_is_estimated_without_allocating_it():
    import resource

    def big(p, fixes, device, known):
        model = nn.Sequential(*[nn.Linear(8192, 8192, bias=False) for _ in range(8)])  # 2 GiB of fp32 weights
        with outside():
            x = torch.randn(4, 8192)
        return StepPlan(model, adamw(model.parameters(), device, lr=1e-3), [{"x": known_tensor(known, x)}],
                        loss=lambda m, b: m(b["x"]).sum())

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    est = estimate(big, {}, ())
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    assert est.step_peak > 4 * 2**30  # weights + grads + AdamW state: over 8 GiB of tensors
    assert grown < 512 * MiB  # and the process did not hold them


def test_4bit_and_8bit_stand_ins_hold_what_bitsandbytes_holds():
    bnb = pytest.importorskip("bitsandbytes")
    linear = nn.Linear(128, 96)
    real4 = bnb.nn.Params4bit(linear.weight.data.clone(), requires_grad=False, quant_type="nf4",
                              blocksize=64, compress_statistics=False)._quantize("cpu")
    held4 = real4.numel() * real4.element_size() + real4.quant_state.absmax.numel() * 4
    assert quantized_bytes(128 * 96, 4, 96) == held4
    model = nn.Sequential(nn.Linear(128, 96), nn.ReLU(), nn.Linear(96, 8))
    with fake_world():
        swapped = quantize(model, 4, torch.float32, skip_modules=["2"])
        stand_in = model[0]
        held = stand_in.weight.numel() + stand_in.absmax.numel() * 4
    assert swapped == ["0"] and held == held4
    real8 = bnb.nn.Linear8bitLt(128, 96, has_fp16_weights=False)
    real8.load_state_dict(linear.state_dict())
    real8 = real8.to("cpu")  # moving it quantizes: int8 weight + fp32 row scales
    held8 = real8.weight.numel() * real8.weight.element_size() + real8.weight.SCB.numel() * 4
    assert quantized_bytes(128 * 96, 8, 96) == held8


def test_running_two_of_four_identical_micro_batches_gives_the_same_peak():
    def four(p, fixes, device, known):
        plan = mlp({**PARAMS, "micro": 4}, fixes, device, known)
        plan.run_micro = p["run_micro"]
        return plan

    two, every = estimate(four, {"run_micro": 2}, ()), estimate(four, {"run_micro": None}, ())
    assert two.step_peak == every.step_peak
    ran = {r.name for r in two.phases}  # two of the four ran: the equality is not of two full runs
    assert "step1.forward.2" in ran and "step1.forward.3" not in ran, sorted(ran)
    assert "step1.forward.4" in {r.name for r in every.phases}


def test_a_case_study_is_estimated_by_the_builder_its_folder_registers():
    """S5's builder (memtests/s5_generic_oom/estimate.py, found through its runner) on fake tensors predicts the
    same step on real tensors exactly; a small image keeps the real run cheap."""
    small = load_case(S5_SPEC + "+smaller_batch").with_params(image=32, hidden=256, batch_size=4)
    fake, real = (estimate_scenario(small, "tiny", fake=f) for f in (True, False))
    assert fake.step_peak == real.step_peak > 0
    assert fake.facts == {"batch_size": 4, "micro_batch": 2}


def test_s5_freeze_fp32_freezes_in_the_estimate_what_it_freezes_in_the_run():
    """The builder applies the fix with the runner's own function (model.freeze_hidden): fewer gradients and AdamW
    state than the case without it, and the fake step equals the real one."""
    small = {"image": 32, "hidden": 256, "batch_size": 4}
    frozen = load_case(S5_SPEC + "+freeze_fp32").with_params(**small)
    fake, real = (estimate_scenario(frozen, "tiny", fake=f) for f in (True, False))
    assert fake.step_peak == real.step_peak
    base = estimate_scenario(load_case(S5_SPEC).with_params(**small), "tiny")
    assert fake.at_peak["gradients"] < base.at_peak["gradients"] and fake.step_peak < base.step_peak


def test_a_scenario_without_a_builder_is_named():
    with pytest.raises(LookupError, match="no estimator builder for scenario 'lonely' \\(runner m:run\\)"):
        estimate_scenario(Scenario(name="lonely", run="m:run"))


@pytest.mark.parametrize("spec, message", [
    ("memtests/s5_generic_oom/scenarios.py", "bad case 'memtests/s5_generic_oom/scenarios.py': expected"),
    ("no/such/file.py:S", "case 'no/such/file.py:S': .*file.py is not a Python file"),
    ("no_such_module_xyz:S", "no module 'no_such_module_xyz' on sys.path"),
    (S5_SPEC.replace(":S5", ":S6"), "has no 'S6' \\(its Scenarios: FIND_BATCH, S5\\)"),
    (S5_SPEC.replace(":S5", ":register"), "a function, not a Scenario, as 'register'"),
    (S5_SPEC + "+lroa", "unknown fix 'lroa' \\(this scenario supports: smaller_batch, amp, quantization, pruning, freeze_fp32\\)"),
])
def test_a_bad_case_spec_is_an_error_naming_it(spec, message):
    with pytest.raises(CaseError, match=message):
        load_case(spec)


def test_the_cli_estimates_the_scenarios_it_is_given(tmp_path, capsys):
    out = tmp_path / "est.json"
    assert cli([S5_SPEC, f"half={S5_SPEC}+smaller_batch", "--json", str(out)]) == 0
    rows = {r["label"]: r for r in json.loads(out.read_text())["estimates"]}
    assert rows["half"]["fixes"] == ["smaller_batch"] and rows[S5_SPEC]["fixes"] == []
    assert rows["half"]["estimate"] < rows[S5_SPEC]["estimate"]
    assert "| half |" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli([f"{S5_SPEC}+lroa"])
    assert "unknown fix 'lroa'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli([])
    assert "name at least one CASE" in capsys.readouterr().err


def test_validate_runs_the_case_for_real_beside_its_estimate(tmp_path):
    """`estimate --validate`: the floor and the case measured in gate children, the estimate beside them (a
    subprocess: the measured children come from its own forkserver, as from the CLI)."""
    import subprocess
    import sys

    out = tmp_path / "v.json"
    subprocess.run([sys.executable, "-m", "gpu_budget", "estimate", "--validate", "--json", str(out),
                    f"s5 smaller_batch={S5_SPEC}+smaller_batch"], check=True, capture_output=True, text=True,
                   cwd=Path(__file__).resolve().parents[2], timeout=600)
    saved = json.loads(out.read_text())
    (row,) = saved["rows"]
    assert row["status"] == "ok" and row["label"] == "s5 smaller_batch"
    assert 0 < saved["floor"] < row["measured_step_peak"]
    assert row["measured_added"] == row["measured_step_peak"] - saved["floor"]
    assert row["error"] == row["estimate"] - row["measured_added"]
    assert row["steps_measured"] > 0 and row["measured_entering_steps"] > 0
