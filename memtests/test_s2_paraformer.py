"""S2: Paraformer-large ASR fine-tune, GPU memory growing during training (seed 001).

FunASR's own Paraformer class, fed FunASR's fbank + LFR features of synthetic
16 kHz clips; dynamic batches (FunASR's frame-budget packing) of mixed lengths
with clips over 15 s arriving late. The failure mode is the *growth*:
the per-step series climbs as long clips arrive and capping clip duration
stops it. Under glibc's default allocator the same run climbs faster: freed
activations stay in the heap, the CPU counterpart of CUDA's caching allocator;
test_allocator_retention measures that side by side. The measured series,
slopes and peaks are in FINDINGS.md (generated from the committed reports).

Budgets: the write-up's memory climbed from 17 GB to 54 GB; its fix caps long
audio. The write-up gives no figure for these clips, so each scale's budget is
the middle of the measured as-reported and capped peaks (recorded with the
forkserver preload of pyproject.toml, whose floor they include): it shows that
capping removes the step that breaks it, not a figure from the write-up. At
real scale the per-step series is not a climb: the peak follows the longest
clip in the batch and falls with it, so the growth slope is asserted at tiny
scale only, and the peak step must be the longest clip's wherever the
activations set the peak (below).

Per device. Those budgets and slopes are host RAM of a step that trains on the
CPU. On a CUDA host the step trains on the GPU: the write-up's 17 -> 54 GB was
its whole dataset on its card, not a figure for these 12 (real) or 24 (tiny)
clips, so there every case is measured and baselined without a budget and
expected nothing; the peak step is read from the GPU's allocated memory, and the
RAM growth slopes (measured on the CPU) are not asserted. The allocator-retention
test is about glibc's heap, so it runs on the CPU on any host (device="cpu").

Where the longest clip does not set the peak: CUDA at real scale. There AdamW
updates all parameters at once (its foreach path, for CUDA tensors only), which
holds the weights, their gradients, its two moments and one more
parameter-sized buffer; that is more than a batch's activations beside the
weights and the moments (the gradients are freed between steps), so every
step's allocated peak is the update's, whatever the batch. The H200's real
runs (gpu-real-1 and -2) failed the longest-clip assertion for that reason:
their highest step was a batch of short clips, the steps differed by the
caching allocator's block rounding (under expandable_segments they all but
agree), and docs/gpu-results.md shows the figures. The claim was wrong there,
not the measurement, so on CUDA at real scale the test asserts what holds:
every step's peak is above the four fp32 copies, and the steps are flat within
FLAT. On the CPU AdamW updates one parameter at a time and the activations set
the peak, as they do at tiny scale on CUDA (a small model, long clips).
"""

import importlib.util
from dataclasses import replace

import pytest
from s2_paraformer.scenarios import S2
from trend import slope

pytestmark = pytest.mark.skipif(importlib.util.find_spec("funasr") is None,
                                reason="S2 needs FunASR: pip install -e '.[s2]'")

BUDGET = {"ram": {"tiny": "859 MiB", "real": "4.84 GiB"}, "origin": "measured-gap",  # at real scale too: no write-up figure
          "cuda": {"ram": None, "expect": None}}  # see "Per device"
GROWTH = 30 * 2**20  # bytes per step at tiny scale: between the as-reported climb and the capped fall (FINDINGS.md)
FLAT = 0.02  # the most the steps' allocated peaks may differ, as a share of the highest, where the update sets them


def step_metric(gpu_budget) -> str:
    """Where a step's activations live: host RAM on a CPU host, the GPU's allocated memory on a CUDA host."""
    return "ram" if gpu_budget.device == "cpu" else "vram_allocated"


def longest_clip_sets_the_peak(peaks: list[int], longest: list[float]) -> bool:
    """The step with the longest clip holds the run's peak: the activations set it (the CPU; CUDA at tiny scale)."""
    return peaks.index(max(peaks)) == longest.index(max(longest))


def update_sets_the_peak(peaks: list[int], params: int) -> bool:
    """Every step's peak is above the fp32 weights, gradients and AdamW's two moments, and the steps are flat:
    AdamW's update on CUDA sets each step's peak, whatever the batch (the docstring's last paragraph)."""
    return min(peaks) > 4 * 4 * params and max(peaks) - min(peaks) <= FLAT * max(peaks)


@pytest.mark.gpu_budget(**BUDGET, expect="over-budget")
def test_as_reported(gpu_budget):
    row = gpu_budget.measure(S2, label="as-reported")
    metric = step_metric(gpu_budget)
    peaks, longest = [s.figure(metric) for s in row.steps], [s["longest_s"] for s in row.info["steps"]]
    if metric == "vram_allocated" and gpu_budget.scale == "real":
        assert update_sets_the_peak(peaks, row.info["params"]), (peaks, row.info["params"])
    else:
        assert longest_clip_sets_the_peak(peaks, longest), (peaks, longest)
    if gpu_budget.scale == "tiny" and metric == "ram":
        assert slope(row.steps, "ram") > GROWTH, row.steps


@pytest.mark.gpu_budget(**BUDGET)
def test_fixed_max_duration(gpu_budget):
    row = gpu_budget.measure(S2.with_fixes("max_duration"), label="max_duration")
    if step_metric(gpu_budget) == "ram":
        assert slope(row.steps, "ram") < GROWTH, row.steps
    assert max(c for c in row.info["clip_seconds"]) <= S2.params["max_seconds"]


# fix combinations are built (and validated against the fix library) at collection time
FIX_CASES = {fixes: S2.with_fixes(*fixes.split("+")) for fixes in
             ["length_bucketing", "fixed_batch", "malloc_trim", "max_duration+malloc_trim", "gradient_checkpointing"]}


TOOK_EFFECT = {  # fix -> a fact of the run that shows it took effect (its runner's word alone is not proof)
    "length_bucketing": lambda i: [s["longest_s"] for s in i["steps"]] == sorted(s["longest_s"] for s in i["steps"]),
    "fixed_batch": lambda i: set(i["batch_sizes"][:-1]) == {S2.params["batch_size"]},
    "malloc_trim": lambda i: i["malloc_trim_calls"] == len(i["steps"]) > 0,
    "max_duration": lambda i: max(i["clip_seconds"]) <= S2.params["max_seconds"],
    "gradient_checkpointing": lambda i: i["fixes_applied"]["gradient_checkpointing"].startswith("not supported"),
}


@pytest.mark.parametrize("fixes", list(FIX_CASES))
def test_fix(gpu_budget, fixes):
    """Each other proposed fix, gated by its baseline, with a fact showing it took effect; FINDINGS.md gives its
    measured effect (FunASR 1.4.16's Paraformer has no checkpointing switch: the runner records that as a fact)."""
    info = gpu_budget.measure(FIX_CASES[fixes], label=fixes).info
    assert info["steps"], "no train steps measured"
    for fix in fixes.split("+"):
        assert TOOK_EFFECT[fix](info), (fix, info)


@pytest.mark.gpu_budget_probe
@pytest.mark.gpu_budget(device="cpu")  # glibc's heap: a CPU step's activations, on any host
def test_allocator_retention(gpu_budget):
    """The same as-reported run under glibc's default allocator grows faster and peaks higher: the heap keeps
    what the steps freed. Two unjudged measurements side by side (the system allocator's peaks scatter run to
    run, too much for a baseline gate: benchmarks/RESULTS.md section 4; the measured pair is in FINDINGS.md)."""
    steady = gpu_budget.peak(S2)
    system = gpu_budget.peak(S2.with_params(malloc="system"))
    assert steady.ok and system.ok
    print(f"steady: peak {steady.peaks.ram / 2**20:.1f} MiB, {slope(steady.steps, 'ram') / 2**20:.1f} MiB/step; "
          f"system: peak {system.peaks.ram / 2**20:.1f} MiB, {slope(system.steps, 'ram') / 2**20:.1f} MiB/step")
    assert system.info["malloc"] == "system" and steady.info["malloc"] == "steady"
    assert system.peaks.ram > steady.peaks.ram + 32 * 2**20
    assert slope(system.steps, "ram") > slope(steady.steps, "ram")


CUDA_ONLY = replace(S2, scales={name: {**over, "needs_cuda": True} for name, over in S2.scales.items()})
CUDA_CASES = {fixes: CUDA_ONLY.with_fixes(fixes) for fixes in ["empty_cache", "expandable_segments"]}


@pytest.mark.parametrize("fixes", list(CUDA_CASES))
def test_cuda_fix(gpu_budget, fixes):
    """Caching-allocator fixes act on CUDA memory only: measured on a GPU host, a skip with the reason on CPU."""
    row = gpu_budget.measure(CUDA_CASES[fixes], label=fixes)
    assert row.peaks.vram_reserved is not None
