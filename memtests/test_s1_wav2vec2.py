"""S1: wav2vec2 bird-sound classifier, host RAM past Colab's 12.7 GB (seed 000).

The write-up does not give clip lengths; bird recordings run long, and its
first fix is `max_length = sampling_rate * max_seconds` with truncation, so
"as reported" feeds untruncated long clips: 50 s at real scale, where the peak
grows faster than linearly with clip length (test_what_drives_ram measures it;
FINDINGS.md gives the peaks by clip length at both scales).

Budgets (origin= below): the real one is the write-up's figure, Colab's 12.7 GB
(10^9 bytes, 11.83 GiB; it was 12.7 GiB before the origins were declared); it
sits between untruncated 50 s clips and clips truncated to 5 s. The tiny model
keeps the conv feature encoder, whose activations scale with audio length, over
the process's import floor: the tiny budget is the middle of the gap between the
measured untruncated (20 s) and truncated (5 s) tiny peaks, so it sits between
the two the same way. The measured peaks are in FINDINGS.md, their spread over
fresh sessions in benchmarks/RESULTS.md (section 4). test_s1_script.py gates the
same run as a script, with a budget of its own.

Every other fix the write-up proposes is measured on the as-reported
configuration and gated against its own baseline; FINDINGS.md gives each
one's saving and verdict.

Per device. The write-up's user trained on Colab with a GPU, and host RAM (not
VRAM) hit the 12.7 GB limit. On a CPU host the step's activations are host RAM:
the tiny and real budgets above apply and as reported breaks them. On a CUDA
host the step trains on the GPU: 12.7 GB stays the real scale's host-RAM budget
(the write-up's figure, and it is host RAM); the tiny budget, set from CPU peaks
on the import floor, does not apply (the CUDA runtime adds host RSS of its
own, not measured here yet); the write-up gives no VRAM figure, so GPU memory is measured and
baselined without a budget; and with the activations on the GPU as reported
does not break host RAM (measured on an H200 at real scale: docs/gpu-results.md),
so there it is expected nothing. What drives memory is read from host RAM on a CPU host and from the GPU's
allocated memory on a CUDA host.
"""

from itertools import pairwise

import pytest
from cards import CARDS
from s1_wav2vec2.scenarios import AS_REPORTED

FIXED = AS_REPORTED.with_fixes("truncate")
# card=: on a GPU every case runs as on Colab's T4 (memtests/cards.py: its proportional tiny card)
BUDGET = {"ram": {"tiny": "586 MiB", "real": "12.7 GB"}, "origin": {"tiny": "measured-gap", "real": "write-up"},
          "cuda": {"ram": {"real": "12.7 GB"}, "expect": None}, "card": CARDS["s1"]}  # see "Per device" above

FIXES = {  # fix(es) -> a fact that shows the fix took effect
    "lazy_data": lambda i: i["dataset_materialised_bytes"] == 0,
    "freeze_feature_encoder": lambda i: i["trainable_params"] < i["total_params"],
    "lora": lambda i: i["trainable_params"] < 0.2 * i["total_params"],
    "lora+freeze_feature_encoder": lambda i: i["trainable_params"] < 0.2 * i["total_params"],
    "gradient_checkpointing": lambda i: i["gradient_checkpointing_active"],
    "gc_collect": lambda i: i["gc_collect_calls"] >= 2 + i["optimizer_steps"],  # after load, data and every step
    "low_cpu_mem_usage": lambda i: i["low_cpu_mem_usage_passed"],
    "lora+load_in_8bit": lambda i: i["quantized_linears"] > 0,
    "lora+load_in_4bit": lambda i: i["quantized_linears"] > 0,
}
CASES = {fixes: AS_REPORTED.with_fixes(*fixes.split("+")) for fixes in FIXES}  # validated at collection


@pytest.mark.gpu_budget(**BUDGET, expect="over-budget")
def test_as_reported(gpu_budget):
    info = gpu_budget.measure(AS_REPORTED, label="as-reported").info
    assert info["mismatched_keys"] == ["classifier.bias", "classifier.weight"]  # the new head, as reported
    assert info["mixed_precision_active"] is (gpu_budget.device == "cuda")  # fp16=True does nothing on a CPU
    assert info["gc_collect_calls"] == 0  # as reported collects nothing by hand (gc_collect's count is its proof)


@pytest.mark.gpu_budget(**BUDGET)
def test_fixed_truncate(gpu_budget):
    info = gpu_budget.measure(FIXED, label="truncate").info
    assert info["train_input_seconds_max"] == 5  # declared: the params' cap
    # measured: the longest input the extractor fed the model, so a cap the runner does not apply fails here
    assert info["input_samples_fed_max"] == FIXED.params["max_seconds"] * FIXED.params["sampling_rate"], info


@pytest.mark.parametrize("fixes", list(FIXES))
def test_fix(gpu_budget, fixes):
    info = gpu_budget.measure(CASES[fixes], label=fixes).info
    assert FIXES[fixes](info), info


DRIVERS = {"tiny": {"clips": [5, 10, 20], "accumulate_at": 10}, "real": {"clips": [15, 30], "accumulate_at": 15}}


@pytest.mark.gpu_budget_probe  # unjudged: no budget marker, since none is judged
def test_what_drives_ram(gpu_budget):
    """Clip length drives the peak; the number of accumulated micro-batches does not; load and data are the floor.

    Unjudged probes of the as-reported run (one knob changed each), their phase
    peaks noted in the report and FINDINGS.md: clip lengths, then accumulation 1
    and 8 against the seed's 4 at one clip length (tiny's as-reported run
    accumulates 1: its clip-length probe is that row). Data materialisation is the lazy_data case above;
    the data phase's peak also grows with clip length. The measured peaks of
    each scale are in FINDINGS.md (the notes under s1_wav2vec2, from the
    committed reports): host RAM on a CPU host. On a CUDA host the activations
    are on the GPU, so the same questions are asked of the allocated GPU peak
    (not measured yet).
    """
    drivers = DRIVERS[gpu_budget.scale]
    metric, field = ("ram", "ram_peak") if gpu_budget.device == "cpu" else ("vram_allocated", "vram_allocated")

    def probe(**params) -> dict:
        m = gpu_budget.peak(AS_REPORTED.with_params(**params))
        assert m.ok, m.error
        phases = {name: getattr(p, field) for name, p in m.phases.items()}
        return {"peak": m.peaks.figure(metric), "load": phases["load"], "data": phases["data"],
                "train": m.step_peaks.figure(metric)}

    def mib(n: int) -> float:
        return round(n / 2**20, 1)

    clips = {s: probe(clip_seconds=s) for s in drivers["clips"]}
    at = drivers["accumulate_at"]
    seed = AS_REPORTED.params["gradient_accumulation_steps"]  # the seed's 4 (tiny's as-reported run accumulates 1)
    scale_default = AS_REPORTED.params_for(gpu_budget.scale)["gradient_accumulation_steps"]  # clips[at] ran with it
    accumulate = {a: clips[at] if a == scale_default else probe(clip_seconds=at, gradient_accumulation_steps=a)
                  for a in sorted({1, scale_default, seed, 8})}
    gpu_budget.note(AS_REPORTED, f"{metric} peak by clip length (s -> MiB): " + ", ".join(f"{s} s {mib(c['peak'])}" for s, c in clips.items())
                    + f"; by gradient accumulation at {at} s clips: " + ", ".join(f"{a} {mib(c['peak'])}" for a, c in accumulate.items())
                    + f"; phase floor at {at} s: load {mib(clips[at]['load'])}, data {mib(clips[at]['data'])}",
                    clips={s: {k: mib(v) for k, v in c.items()} for s, c in clips.items()},
                    accumulation={a: {k: mib(v) for k, v in c.items()} for a, c in accumulate.items()}, metric=metric)
    peaks = [clips[s]["peak"] for s in drivers["clips"]]
    assert all(b > a * 1.05 for a, b in pairwise(peaks)), peaks  # each longer clip: >5 % more
    by = {a: c["peak"] for a, c in accumulate.items()}
    assert abs(by[8] - by[seed]) < 0.05 * by[seed], by  # more micro-batches add nothing: each frees its activations
    assert by[1] <= by[seed] + 4 * 2**20, by  # accumulating at all holds the gradients across micro-batches
    assert all(c["load"] < c["train"] for c in clips.values())  # the step, not the load, sets the peak
