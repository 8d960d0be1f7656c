"""S2's estimator builder: the step of the run's heaviest batch, with a CIF that fake tensors can follow.

The runner packs its clips into dynamic batches; the step peak is the step of
the heaviest batch. run_batches() runs the runner's own plan (data.py: clip
lengths, max_duration pieces, FunASR's packing) on placeholder waves, takes the
frontend's own frame counts on silent audio of each length, and the builder picks
the batch with the largest activation proxy, B*T*(4*hidden + ffn) + B*heads*T^2
(linear layers plus attention scores, per encoder layer). Estimated as the run
goes (`as_run`), every batch takes its step in the run's order, each made at its
step and dropped after it, with empty_cache after each step where the fix asks:
the allocator replay then follows the write-up's step-by-step growth.

Paraformer's CIF fires where the running sum of its weights crosses 1, a
position that depends on weight values. In training the weights are scaled
so they sum to the target length, so each row fires exactly that many times;
cif_v1 below is FunASR 1.4.16's cif_v1 with the fire positions taken evenly
over each row's frames (positions change no shape) instead of read from
values. The sampler's argmax predictions are taken as token 0, which matches
no target token, as an untrained model's predictions do not.
"""

from __future__ import annotations

import numpy as np
import torch

from gpu_budget.estimate import StepPlan, adamw
from gpu_budget.estimate.fake import known_batch, known_tensor, outside

from .data import clip_plan, frames, make_batches, pieces, token_count
from .model import RATE, frontend, funasr, model_config


def build(p: dict, fixes: tuple[str, ...], device, known) -> StepPlan:
    Paraformer, _ = funasr()
    config = model_config(p)
    model = Paraformer(**config)
    run = run_batches(p, fixes)
    lengths, tokens = max(run, key=lambda b: cost(p, b[0]))
    batch = known_batch(known, lambda: _batch(p, lengths, tokens))
    targets = {"tokens": tokens}  # the batch in the step: CIF fires its target lengths
    undo = []
    if known is not None:  # fake tensors: CIF's fire positions and the sampler's predictions have no values
        undo.append(patch_cif(lambda: [t + config["predictor_bias"] for t in targets["tokens"]], known))
        known.assume(torch.ops.aten.argmax.default, 0)

    def loss(m, b):
        targets["tokens"] = b["tokens"]
        return m(b["speech"], b["speech_lengths"], b["text"], b["text_lengths"])[0]

    def step_batch(lengths: list[int], tokens: list[int]):
        return lambda: {**known_batch(known, lambda: _batch(p, lengths, tokens)), "tokens": tokens}

    return StepPlan(model, adamw(model.parameters(), device, lr=5e-5), [{**batch, "tokens": tokens}], loss=loss,
                    undo=undo, sequence=[step_batch(*b) for b in run],
                    empty_cache="empty_cache" in fixes and device.cuda,
                    batch_note="the step of the run's heaviest batch (largest activation proxy; s2_paraformer/estimate.py)",
                    notes=["CIF fires exactly the target length; argmax predictions taken as matching no target"],
                    facts={"batch_clips": len(lengths), "longest_frames": max(lengths), "tokens": tokens},
                    expandable_segments="expandable_segments" in fixes and device.cuda)


def _batch(p: dict, lengths: list[int], tokens: list[int]) -> dict:
    """Padded LFR features (560-dim) and padded token ids, as the runner feeds them."""
    g = torch.Generator().manual_seed(p["seed"])
    speech = torch.zeros(len(lengths), max(lengths), 80 * 7)
    text = torch.full((len(tokens), max(tokens)), -1, dtype=torch.long)
    for i, (n, t) in enumerate(zip(lengths, tokens)):
        speech[i, :n] = torch.randn(n, 80 * 7, generator=g)
        text[i, :t] = torch.randint(3, p["vocab"], (t,), generator=g)
    return {"speech": speech, "speech_lengths": torch.tensor(lengths), "text": text,
            "text_lengths": torch.tensor(tokens)}


def _lfr_frames(samples: list[int]) -> list[int]:
    """LFR frames FunASR's WavFrontend gives a clip of each length (computed on silence, outside the fake world)."""
    _, WavFrontend = funasr()
    with outside():
        fbank = frontend(WavFrontend)
        cache: dict[int, int] = {}
        for n in set(samples):
            feats, _ = fbank(torch.zeros(1, n), torch.tensor([n]))
            cache[n] = int(feats.shape[1])
    return [cache[n] for n in samples]


def run_batches(p: dict, fixes: tuple[str, ...]) -> list[tuple[list[int], list[int]]]:
    """(LFR frames, token count) of each clip of each batch the run trains on, in order: the runner's clips,
    pieces and batches, on placeholder waves of the same lengths."""
    has = fixes.__contains__
    samples, tokens = [], []
    for seconds in clip_plan(p):
        for wave, toks in pieces(np.empty(int(seconds * RATE), dtype=np.uint8), [0] * token_count(seconds, p), p, has):
            samples.append(len(wave))
            tokens.append(len(toks))
    batches = make_batches([frames(n) for n in samples], p, has)[: p.get("max_steps")]
    lfr = _lfr_frames(samples)
    return [([lfr[i] for i in batch], [tokens[i] for i in batch]) for batch in batches]


def cost(p: dict, lengths: list[int]) -> int:
    """A batch's activation proxy: linear layers plus attention scores, per encoder layer."""
    b, t = len(lengths), max(lengths)
    return b * t * (4 * p["hidden"] + p["ffn"]) + b * p["heads"] * t * t


def cif_v1(hidden, alphas, threshold, target_lengths: list[int], known):
    """FunASR 1.4.16 cif_v1 with known fire positions: target_lengths[b] evenly spaced fires in row b."""
    from funasr.models.paraformer.cif_predictor import cif_wo_hidden_v1

    fires, _ = cif_wo_hidden_v1(alphas, threshold, return_fire_idxs=True)
    batch_size, len_time, hidden_size = hidden.size()
    device, dtype = hidden.device, hidden.dtype
    with outside():
        real = torch.zeros(batch_size, len_time, dtype=torch.bool)
        for b, n in enumerate(target_lengths):
            real[b, torch.linspace(0, len_time - 1, min(n, len_time)).long()] = True
    fire_idxs = known_tensor(known, real)
    # from here on, FunASR's cif_v1 as written
    frames = torch.zeros(batch_size, len_time, hidden_size, dtype=dtype, device=device)
    prefix_sum_hidden = torch.cumsum(alphas.unsqueeze(-1).repeat((1, 1, hidden_size)) * hidden, dim=1)
    frames = prefix_sum_hidden[fire_idxs]
    shift_frames = torch.roll(frames, 1, dims=0)
    batch_len = fire_idxs.sum(1)
    batch_idxs = torch.cumsum(batch_len, dim=0)
    shift_batch_idxs = torch.roll(batch_idxs, 1, dims=0)
    shift_batch_idxs[0] = 0
    shift_frames[shift_batch_idxs] = 0
    remains = fires - torch.floor(fires)
    remain_frames = remains[fire_idxs].unsqueeze(-1).repeat((1, hidden_size)) * hidden[fire_idxs]
    shift_remain_frames = torch.roll(remain_frames, 1, dims=0)
    shift_remain_frames[shift_batch_idxs] = 0
    frames = frames - shift_frames + shift_remain_frames - remain_frames
    max_label_len = max(min(n, len_time) for n in target_lengths)
    frame_fires = torch.zeros(batch_size, max_label_len, hidden_size, dtype=dtype, device=device)
    indices = torch.arange(max_label_len, device=device).expand(batch_size, -1)
    frame_fires_idxs = indices < batch_len.unsqueeze(1)
    frame_fires[frame_fires_idxs] = frames
    return frame_fires, fires


def patch_cif(target_lengths, known):
    """Point FunASR's predictor at cif_v1 above (undo with the returned function); target_lengths() says the
    lengths of the batch in the step."""
    from funasr.models.paraformer import cif_predictor

    original = cif_predictor.cif_v1
    cif_predictor.cif_v1 = lambda hidden, alphas, threshold: cif_v1(hidden, alphas, threshold, target_lengths(), known)

    def undo() -> None:
        cif_predictor.cif_v1 = original

    return undo
