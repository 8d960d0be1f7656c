"""What the S2 estimator needs beyond the runner: the run's largest batch, and a CIF fakes can follow.

The runner packs its clips into dynamic batches; the step peak is the step of
the heaviest batch. largest_batch() rebuilds the same plan (clip lengths,
max_duration splits, FunASR's packing, the frontend's own frame counts on
silent audio of each length) and picks the batch with the largest activation
proxy, B*T*(4*hidden + ffn) + B*heads*T^2 (linear layers plus attention
scores, per encoder layer).

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

from gpu_budget.scenario import RunContext


def _frames_per_clip(p: dict, samples: list[int]) -> list[int]:
    """LFR frames FunASR's WavFrontend gives a clip of each length (computed on silence, outside the fake world)."""
    from gpu_budget.estimate_fake import outside
    from gpu_budget.scenarios import s2_paraformer as runner

    _, WavFrontend = runner._funasr()
    with outside():
        frontend = WavFrontend(fs=runner.RATE, window="hamming", n_mels=80, frame_length=25, frame_shift=10,
                               lfr_m=7, lfr_n=6, dither=0.0)
        cache: dict[int, int] = {}
        for n in set(samples):
            feats, _ = frontend(torch.zeros(1, n), torch.tensor([n]))
            cache[n] = int(feats.shape[1])
    return [cache[n] for n in samples]


def largest_batch(p: dict, fixes: tuple[str, ...]) -> tuple[list[int], list[int]]:
    """(LFR frames, token count) of each clip in the run's heaviest batch."""
    from gpu_budget.scenarios import s2_paraformer as runner

    samples, tokens = [], []
    for seconds in runner.clip_plan(p):
        n, t = int(seconds * runner.RATE), max(1, round(seconds * p["tokens_per_second"]))
        if "max_duration" in fixes and n > p["max_seconds"] * runner.RATE:
            pieces = int(np.ceil(n / (p["max_seconds"] * runner.RATE)))
            samples += [len(a) for a in np.array_split(np.empty(n, dtype=np.uint8), pieces)]
            tokens += [max(1, len(a)) for a in np.array_split(np.empty(t, dtype=np.uint8), pieces)]
        else:
            samples.append(n)
            tokens.append(t)
    ctx = RunContext("estimate", p, tuple(fixes), None, "cpu")  # make_batches reads params and fixes only
    batches = runner.make_batches([round(n / runner.RATE * runner.FRAMES_PER_SECOND) for n in samples], ctx)
    batches = batches[: p.get("max_steps")]
    frames = _frames_per_clip(p, samples)

    def cost(batch: list[int]) -> int:
        b, t = len(batch), max(frames[i] for i in batch)
        return b * t * (4 * p["hidden"] + p["ffn"]) + b * p["heads"] * t * t

    heaviest = max(batches, key=cost)
    return [frames[i] for i in heaviest], [tokens[i] for i in heaviest]


def cif_v1(hidden, alphas, threshold, target_lengths: list[int], known):
    """FunASR 1.4.16 cif_v1 with known fire positions: target_lengths[b] evenly spaced fires in row b."""
    from funasr.models.paraformer.cif_predictor import cif_wo_hidden_v1

    from gpu_budget.estimate_fake import known_tensor, outside

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


def patch_cif(target_lengths: list[int], known):
    """Point FunASR's predictor at cif_v1 above (undo with the returned function)."""
    from funasr.models.paraformer import cif_predictor

    original = cif_predictor.cif_v1
    cif_predictor.cif_v1 = lambda hidden, alphas, threshold: cif_v1(hidden, alphas, threshold, target_lengths, known)

    def undo() -> None:
        cif_predictor.cif_v1 = original

    return undo
