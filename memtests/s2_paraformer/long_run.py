"""S2's long run: FunASR's train_ds.py, as finetune.sh runs it, over a length mix that follows the write-up.

The write-up: memory grew from 17 GB to 54 GB over a long run; its data held
259 clips over 15 s; its log showed batches of 14 to 24 clips (dynamic
batching). tool.py's TRAIN_DS trains the runner's 24 clips once (a few steps);
this mix is made for hundreds of steps, so a climb of reserved memory has room
to show:

- 259 clips of 15.5-19.5 s (the write-up's count of clips over 15 s), within
  the model config's max_token_length (2048, Paraformer's config.yaml and
  FunASR's default: 10 ms frames plus tokens), so FunASR's index keeps every
  one of them; with 4 tokens a second it silently drops a clip past 19.7 s;
- short clips of 2.45-4.28 s: under finetune.sh's budget of 6000 padded 10 ms
  frames a batch of clips at most L frames long holds floor(6000 / L) of them,
  so these make batches of 14 (428 frames) to 24 (245 frames) clips.

What the budget allows: a batch that holds a clip over 15 s (more than 1500
frames) holds at most 3 clips (4 x 1501 > 6000), so batches of 14-24 clips and
clips over 15 s cannot meet in one batch; with this budget the write-up's 14-24
can only be its batches of short clips. FunASR's sampler sorts each buffer of
sort_size (1024) shuffled clips by length, so an epoch of 3072 clips is three
ascending runs, short batches then 3-clip ones (about 250 steps): the length
pattern repeats within an epoch, and each epoch (a fresh shuffle) ends in
train_ds.py's own torch.cuda.empty_cache(). Two epochs: about 500 steps.

LONG_RUN trains it on CUDA (train_ds.py trains on CUDA only: tool.py);
EXPANDABLE is the same run with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
in the command's environment; PLAN is FunASR's own dataset and sampler over the
same prepared clips, no training, every epoch's batches (it runs on the CPU).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from gpu_budget import Scenario

from .data import clip_plan, token_count
from .model import RATE, funasr, model_config
from .tool import TRAIN_DS, funasr_sampler, model_dir_and_lists

LONG_S = 15  # the write-up's "longer than 15 s"
MIX = {"clips": 3072, "long_clips": 259, "short_seconds": [2.45, 4.28], "long_seconds": [15.5, 19.5]}
EPOCHS = 2


def prepare(ctx) -> None:
    """What tool.prepare builds (the runner's random-init weights, then tool.model_dir_and_lists: the model dir's
    config and tokens, the jsonl FunASR's scp2jsonl makes), with the clips cut at random offsets from one synthetic
    signal: the runner's prepare synthesises each clip afresh, 30 s for this mix's 3.9 hours of audio on a 2-core
    host against 5 s here. The clips' lengths and token counts, all FunASR's batches and the steps' shapes depend
    on, are the runner's clip_plan's."""
    import numpy as np
    import soundfile as sf
    import torch

    Paraformer, _ = funasr()  # FunASR missing: the case skips with how to install it
    p, assets = ctx.params, ctx.assets
    torch.manual_seed(p["seed"])
    conf = model_config(p)
    torch.save(Paraformer(**conf).state_dict(), assets / "model.pt")
    rng = np.random.default_rng(p["seed"] + 1)
    seconds = clip_plan(p)
    t = np.arange(int(2 * max(seconds) * RATE)) / RATE
    signal = (0.05 * sum(np.sin(2 * np.pi * f * t) for f in rng.uniform(100, 3000, size=3))
              + 0.01 * rng.standard_normal(t.size)).astype(np.float32)
    clips = []
    for i, s in enumerate(seconds):
        n, wav = int(s * RATE), f"clip_{i:04d}.wav"
        start = int(rng.integers(0, signal.size - n))
        sf.write(assets / wav, signal[start:start + n], RATE, subtype="PCM_16")
        clips.append({"wav": wav, "seconds": s, "tokens": rng.integers(3, p["vocab"], size=token_count(s, p)).tolist()})
    (assets / "data.json").write_text(json.dumps({"config": conf, "clips": clips}))
    model_dir_and_lists(assets, p, clips)


LONG_RUN = Scenario(
    name="s2_funasr_long_run", command=TRAIN_DS.command, env=TRAIN_DS.env, prepare="s2_paraformer.long_run:prepare",
    params={**TRAIN_DS.params, "max_epoch": EPOCHS},
    scales={"tiny": {**TRAIN_DS.scales["tiny"], **MIX, "needs_cuda": True}},  # train_ds.py trains on CUDA only
    prepared_from=TRAIN_DS.prepared_from)
EXPANDABLE = replace(LONG_RUN, name="s2_funasr_long_run_expandable",
                     env={**LONG_RUN.env, "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})


def plan(ctx) -> dict:
    """Every epoch's batches as train_ds.py's dataloader makes them (FunASR's AudioDataset and BatchSampler, each
    epoch's set_epoch), no training: clips, longest clip and clips over LONG_S per batch; the clips its index drops."""
    p = ctx.params
    ctx.meter.start("plan")
    conf, data, rows, kept, sampler = funasr_sampler(ctx)
    epochs = []
    for epoch in range(p["max_epoch"]):
        sampler.set_epoch(epoch)
        seconds = [[data.get_source_len(i) / 100 for i in batch] for batch in sampler]
        epochs.append([{"clips": len(s), "longest_s": max(s), "long": sum(x > LONG_S for x in s)} for s in seconds])
    ctx.meter.stop()
    return {"clips": len(rows), "kept": len(kept), "max_token_length": conf["max_token_length"],
            "batch_frames": p["batch_frames"], "sort_size": p["sort_size"],
            "missing": sum(not Path(r["source"]).is_file() for r in rows),  # a wav the DataLoader would not find
            "long_clips": sum(r["source_len"] / 100 > LONG_S for r in rows if r["source"] in kept),
            "dropped_s": sorted(r["source_len"] / 100 for r in rows if r["source"] not in kept), "epochs": epochs}


PLAN = Scenario(name="s2_funasr_long_plan", run="s2_paraformer.long_run:plan", prepare=LONG_RUN.prepare,
                params=LONG_RUN.params, scales={"tiny": {**TRAIN_DS.scales["tiny"], **MIX}},
                prepared_from=LONG_RUN.prepared_from)  # the same prepared clips as LONG_RUN's
