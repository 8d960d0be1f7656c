"""S2: FunASR Paraformer fine-tune whose memory grows step by step under dynamic batching.

The write-up: Paraformer-large fine-tuned with FunASR, dynamic batches of
14-24 clips, 259 clips over 15 s, memory climbing from 17 to 54 GB during
training. Here FunASR's own Paraformer class is built offline from a dict
config (no hub), fed kaldi fbank + LFR features from FunASR's own WavFrontend,
and trained with AdamW on batches packed the way FunASR's dynamic sampler
packs them (padded frames <= a budget), with the long clips arriving late.

Fixes (ctx.has):
  length_bucketing       sort by length before packing (FunASR's sort_size buffer)
  max_duration           split clips longer than params["max_seconds"] into pieces
  fixed_batch            params["batch_size"] clips per batch instead of a frame budget
  gradient_checkpointing FunASR's Paraformer has no switch for it: recorded as not supported
  malloc_trim            glibc malloc_trim(0) after each step (host RAM the allocator keeps)
  empty_cache            gc.collect() + torch.cuda.empty_cache() after each step
  expandable_segments    CUDA allocator setting; recorded as not applicable on CPU
"""

from __future__ import annotations

import ctypes
import gc
import json

import numpy as np
import torch

INSTALL = ("pip install --no-deps funasr==1.4.16 librosa "
           "&& pip install kaldi-native-fbank kaldiio rapidfuzz lazy_loader torch_complex")
FIXES = ("length_bucketing", "max_duration", "fixed_batch", "gradient_checkpointing",
         "malloc_trim", "empty_cache", "expandable_segments")
RATE = 16000
FRAMES_PER_SECOND = 100  # 10 ms fbank frames: the unit of FunASR's dynamic batch budget


def _funasr():
    """FunASR's model and frontend classes, or MissingDependency (the case is skipped with it) saying how to install them.

    The memtest checks find_spec("funasr") at collection; the import itself can still fail here
    (a dependency FunASR does not declare, a wheel for another Python): that is a skip too.
    """
    from gpu_budget.requires import optional_import

    optional_import("kaldi_native_fbank", INSTALL)  # FunASR's fbank backend when torchaudio is absent
    frontend = optional_import("funasr.frontends.wav_frontend", INSTALL)
    paraformer = optional_import("funasr.models.paraformer.model", INSTALL)
    return paraformer.Paraformer, frontend.WavFrontend


def model_config(p: dict) -> dict:
    """Paraformer-large's config.yaml as a dict, with the sizes taken from params (tiny or real)."""
    h = p["hidden"]
    return {
        "specaug": "SpecAugLFR",
        "specaug_conf": {"apply_time_warp": False, "apply_freq_mask": True, "freq_mask_width_range": [0, 30],
                         "lfr_rate": 6, "num_freq_mask": 1, "apply_time_mask": True,
                         "time_mask_width_range": [0, 12], "num_time_mask": 1},
        "encoder": "SANMEncoder",
        "encoder_conf": {"output_size": h, "attention_heads": p["heads"], "linear_units": p["ffn"],
                         "num_blocks": p["encoder_blocks"], "dropout_rate": 0.1, "positional_dropout_rate": 0.1,
                         "attention_dropout_rate": 0.1, "input_layer": "pe",
                         "pos_enc_class": "SinusoidalPositionEncoder", "normalize_before": True,
                         "kernel_size": 11, "sanm_shfit": 0, "selfattention_layer_type": "sanm"},
        "decoder": "ParaformerSANMDecoder",
        "decoder_conf": {"attention_heads": p["heads"], "linear_units": p["ffn"], "num_blocks": p["decoder_blocks"],
                         "dropout_rate": 0.1, "positional_dropout_rate": 0.1, "self_attention_dropout_rate": 0.1,
                         "src_attention_dropout_rate": 0.1, "att_layer_num": p["decoder_blocks"],
                         "kernel_size": 11, "sanm_shfit": 0},
        "predictor": "CifPredictorV2",
        "predictor_conf": {"idim": h, "threshold": 1.0, "l_order": 1, "r_order": 1, "tail_threshold": 0.45},
        "input_size": 80 * 7,  # LFR m=7 of 80-dim fbank
        "vocab_size": p["vocab"],
        "ctc_weight": 0.0, "lsm_weight": 0.1, "length_normalized_loss": True,
        "predictor_weight": 1.0, "predictor_bias": 1, "sampling_ratio": 0.75,
    }


def clip_plan(p: dict) -> list[float]:
    """Clip lengths in arrival order: mixed short clips, then the long (> 15 s) ones, so growth shows late."""
    rng = np.random.default_rng(p["seed"])
    short = rng.uniform(*p["short_seconds"], size=p["clips"] - p["long_clips"])
    long = rng.uniform(*p["long_seconds"], size=p["long_clips"])
    return np.concatenate([short, long]).round(2).tolist()


def prepare(ctx) -> None:
    """Random-init weights saved with torch.save, synthetic 16 kHz WAV clips and their token ids."""
    import soundfile as sf

    Paraformer, _ = _funasr()
    p = ctx.params
    torch.manual_seed(p["seed"])
    conf = model_config(p)
    torch.save(Paraformer(**conf).state_dict(), ctx.assets / "model.pt")
    rng = np.random.default_rng(p["seed"] + 1)
    clips = []
    for i, seconds in enumerate(clip_plan(p)):
        t = np.arange(int(seconds * RATE)) / RATE
        tones = sum(np.sin(2 * np.pi * f * t) for f in rng.uniform(100, 3000, size=3))
        wave = 0.05 * tones + 0.01 * rng.standard_normal(t.size)
        sf.write(ctx.assets / f"clip_{i:03d}.wav", wave.astype(np.float32), RATE, subtype="PCM_16")
        tokens = rng.integers(3, p["vocab"], size=max(1, round(seconds * p["tokens_per_second"])))
        clips.append({"wav": f"clip_{i:03d}.wav", "seconds": seconds, "tokens": tokens.tolist()})
    (ctx.assets / "data.json").write_text(json.dumps({"config": conf, "clips": clips}))


def _split(wave: np.ndarray, tokens: list[int], max_seconds: float) -> list[tuple[np.ndarray, list[int]]]:
    """max_duration: cut a long clip into equal pieces (tokens shared out in proportion)."""
    pieces = int(np.ceil(len(wave) / (max_seconds * RATE)))
    waves, toks = np.array_split(wave, pieces), np.array_split(np.array(tokens), pieces)
    return [(w, t.tolist() or tokens[:1]) for w, t in zip(waves, toks)]


def make_batches(frames: list[int], ctx) -> list[list[int]]:
    """Clip indices per batch: FunASR's dynamic packing (max length x count <= budget) or a fixed size."""
    order = sorted(range(len(frames)), key=frames.__getitem__) if ctx.has("length_bucketing") else range(len(frames))
    if ctx.has("fixed_batch"):
        order, size = list(order), ctx.params["batch_size"]
        return [order[i:i + size] for i in range(0, len(order), size)]
    batches, batch, longest = [], [], 0
    for i in order:
        if batch and max(longest, frames[i]) * (len(batch) + 1) > ctx.params["batch_frames"]:
            batches.append(batch)
            batch, longest = [], 0
        batch.append(i)
        longest = max(longest, frames[i])
    return batches + [batch] if batch else batches


def _fix_notes(ctx) -> dict:
    """What each requested fix amounts to on this device (applied, or why not)."""
    notes = {name: "applied" for name in ctx.fixes}
    if ctx.has("gradient_checkpointing"):
        notes["gradient_checkpointing"] = ("not supported: FunASR 1.4.16 Paraformer/SANMEncoder/"
                                           "ParaformerSANMDecoder have no checkpointing switch; nothing changed")
    if ctx.has("expandable_segments") and ctx.device != "cuda":
        notes["expandable_segments"] = "not applicable on CPU (a CUDA caching-allocator setting); nothing changed"
    if ctx.has("empty_cache") and ctx.device != "cuda":
        notes["empty_cache"] = "gc.collect() only: torch.cuda.empty_cache() has nothing to free without CUDA"
    return notes


def run(ctx) -> dict:
    """load (build + load_state_dict) -> data (fbank + LFR) -> one train step per dynamic batch."""
    unknown = set(ctx.fixes) - set(FIXES)
    if unknown:
        raise ValueError(f"s2_paraformer: unknown fixes {sorted(unknown)} (known: {FIXES})")
    import soundfile as sf

    Paraformer, WavFrontend = _funasr()
    p, dev = ctx.params, ctx.device
    trim = ctypes.CDLL("libc.so.6").malloc_trim if ctx.has("malloc_trim") else None
    if ctx.has("expandable_segments") and dev == "cuda":
        torch.cuda.memory._set_allocator_settings("expandable_segments:True")

    ctx.meter.start("load")
    data = json.loads((ctx.assets / "data.json").read_text())
    torch.manual_seed(p["seed"])
    model = Paraformer(**data["config"])
    state = torch.load(ctx.assets / "model.pt", map_location="cpu", weights_only=True)
    model.load_state_dict(state)
    del state
    model.to(dev).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)

    ctx.meter.start("data")
    frontend = WavFrontend(fs=RATE, window="hamming", n_mels=80, frame_length=25, frame_shift=10,
                           lfr_m=7, lfr_n=6, dither=0.0)
    items = []
    for clip in data["clips"]:
        wave, _ = sf.read(ctx.assets / clip["wav"], dtype="float32")
        if ctx.has("max_duration") and len(wave) > p["max_seconds"] * RATE:
            items += _split(wave, clip["tokens"], p["max_seconds"])
        else:
            items.append((wave, clip["tokens"]))
    feats = [frontend(torch.from_numpy(w)[None], torch.tensor([len(w)]))[0][0] for w, _ in items]
    everything = torch.cat(feats)  # no am.mvn offline: global mean/std stands in for FunASR's CMVN
    mean, std = everything.mean(0), everything.std(0) + 1e-5
    feats = [(f - mean) / std for f in feats]
    del everything
    seconds = [len(w) / RATE for w, _ in items]
    batches = make_batches([round(s * FRAMES_PER_SECOND) for s in seconds], ctx)

    pad = torch.nn.utils.rnn.pad_sequence
    steps = []
    for k, batch in enumerate(batches[: p.get("max_steps")], start=1):
        ctx.meter.start(f"train_step_{k}", step=k)
        speech = pad([feats[i] for i in batch], batch_first=True).to(dev)
        speech_lengths = torch.tensor([len(feats[i]) for i in batch], device=dev)
        text = pad([torch.tensor(items[i][1]) for i in batch], batch_first=True, padding_value=-1).to(dev)
        text_lengths = torch.tensor([len(items[i][1]) for i in batch], device=dev)
        loss = model(speech, speech_lengths, text, text_lengths)[0]
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        steps.append({"batch": len(batch), "audio_s": round(sum(seconds[i] for i in batch), 2),
                      "padded_s": round(len(batch) * max(seconds[i] for i in batch), 2),
                      "longest_s": round(max(seconds[i] for i in batch), 2), "loss": round(loss.item(), 3)})
        del speech, speech_lengths, text, text_lengths, loss
        if ctx.has("empty_cache"):
            gc.collect()
            if dev == "cuda":
                torch.cuda.empty_cache()
        if trim is not None:
            trim(0)
    ctx.meter.stop()
    return {
        "params": sum(t.numel() for t in model.parameters()),
        "fixes_applied": _fix_notes(ctx),
        "frontend": "funasr WavFrontend (kaldi-native-fbank fbank, 80 mel, LFR m=7 n=6), dither 0",
        "clips": len(items),
        "clip_seconds": [round(s, 2) for s in seconds],
        "steps": steps,
        "batch_sizes": [s["batch"] for s in steps],
        "audio_seconds_per_step": [s["audio_s"] for s in steps],
    }
