"""S2 over a long run: does GPU reserved memory climb under FunASR's own train_ds.py, as finetune.sh runs it?

The write-up's memory grew from 17 GB to 54 GB over a long run, over data with
259 clips longer than 15 s, in dynamic batches of 14 to 24 clips. Here FunASR's
train_ds.py (tool.py's command, unchanged: its dataset, its dynamic sampler as
finetune.sh sets it, its Trainer) trains the runner's tiny Paraformer for two
epochs over a mix made to follow that (s2_paraformer/long_run.py): 3072 clips,
259 of them 15.5-19.5 s, the rest 2.45-4.28 s, about 500 steps. Twice: with
the default caching allocator and with PYTORCH_CUDA_ALLOC_CONF=
expandable_segments:True in the command's environment. Per step, allocated and
reserved come from the gate's marks (the peaks of each step's phase).

Both are unjudged probes (gpu_budget_probe, peak()): the question is whether
reserved climbs, an observation, not a figure to hold a later run to. A judged
case would also record a baseline of an allocated peak that test_train_ds
already gates, and cost a second pair of runs in the device session.

test_long_run_batch_plan runs anywhere (FunASR's dataset and sampler, no
training: seconds); test_reserved_over_a_long_run needs CUDA (train_ds.py
trains on CUDA only: test_s2_funasr_train_ds.py) and on a host without it skips
at once, before anything is prepared.
"""

import importlib.util
import json
from collections import Counter
from statistics import median

import pytest
from s2_paraformer.climb import read
from s2_paraformer.long_run import EXPANDABLE, LONG_RUN, LONG_S, MIX, PLAN
from s2_paraformer.tool import in_folder

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("funasr") is None or importlib.util.find_spec("hydra") is None,
    reason="S2's training entry point needs FunASR and hydra-core: pip install -e '.[s2]' hydra-core")

MiB = 2**20
LOGGED = (14, 24)  # the write-up's batch sizes


def planned(gpu_budget) -> dict:
    """PLAN's findings: every epoch's batches as train_ds.py's dataloader makes them."""
    plan = gpu_budget.peak(PLAN)
    assert plan.ok, plan.error
    return plan.info


def steps(info: dict) -> list[dict]:
    return [b for epoch in info["epochs"] for b in epoch]


@pytest.mark.gpu_budget_probe
def test_long_run_batch_plan(gpu_budget):
    """The mix's batches as FunASR makes them: every clip kept, 14-24 clips a batch where no clip is over 15 s, and
    at most 3 where one is (what finetune.sh's 6000-frame budget leaves)."""
    info = planned(gpu_budget)
    made = steps(info)
    assert info["missing"] == 0, info["missing"]  # the jsonl names the clips where train_ds.py will read them
    assert info["clips"] == info["kept"] == MIX["clips"] and not info["dropped_s"], info["dropped_s"]
    assert info["long_clips"] == MIX["long_clips"]  # every clip over 15 s within max_token_length: none dropped
    frames = info["batch_frames"]
    assert all(b["clips"] * round(b["longest_s"] * 100) <= frames for b in made if b["clips"] > 1)
    long, short = [b for b in made if b["long"]], [b for b in made if not b["long"]]
    assert all(b["clips"] <= frames // (LONG_S * 100 + 1) for b in long)  # 3: a batch with a clip over 15 s
    outside = [b["clips"] for b in short if not LOGGED[0] <= b["clips"] <= LOGGED[1]]
    buffers = len(info["epochs"]) * -(-info["kept"] // info["sort_size"])
    assert len(outside) <= buffers, outside  # a buffer's last short batch, cut short where its long clips begin
    sizes = Counter(b["clips"] for b in made)
    gpu_budget.note(LONG_RUN, f"the long run's batches, as FunASR's dataset and dynamic sampler make them with "
                    f"finetune.sh's settings ({frames} frames, sort_size {info['sort_size']}; max_token_length "
                    f"{info['max_token_length']}): {len(made)} steps over {len(info['epochs'])} epochs of "
                    f"{info['kept']} clips, {info['long_clips']} of them over {LONG_S} s "
                    f"({info['long_clips'] / info['kept']:.1%}; {MIX['long_seconds'][0]}-{MIX['long_seconds'][1]} s, "
                    f"the rest {MIX['short_seconds'][0]}-{MIX['short_seconds'][1]} s), none dropped. "
                    f"{len(short)} batches hold no clip over {LONG_S} s: {min(b['clips'] for b in short)}-"
                    f"{max(b['clips'] for b in short)} clips, {len(short) - len(outside)} of them within the "
                    f"write-up's {LOGGED[0]}-{LOGGED[1]} (the others a buffer's last short batch: {sorted(outside)}); "
                    f"{len(long)} hold one or more: {min(b['clips'] for b in long)}-{max(b['clips'] for b in long)} "
                    f"clips, since under a {frames}-frame budget a clip over {LONG_S} s leaves room for at most "
                    f"{frames // (LONG_S * 100 + 1)}, so batches of {LOGGED[0]}-{LOGGED[1]} clips and clips over "
                    f"{LONG_S} s never meet. Clips per batch: "
                    + ", ".join(f"{k}: {v}" for k, v in sorted(sizes.items())),
                    sizes={str(k): v for k, v in sorted(sizes.items())}, steps=len(made), clips=info["kept"],
                    long_clips=info["long_clips"], epochs=info["epochs"])


def trained(folder) -> list[dict]:
    """The batch of each training step, as the marks wrote it (tool.py's sitecustomize)."""
    return [json.loads(line) for line in (folder / "funasr_steps.jsonl").read_text().splitlines()]


@pytest.mark.gpu_budget_probe
def test_reserved_over_a_long_run(gpu_budget, tmp_path):
    """On CUDA, the long run twice (default allocator, expandable_segments): per step allocated and reserved, and
    whether reserved climbs (climb.py), beside the steps FunASR planned."""
    runs = {}
    for label, scenario in (("default", LONG_RUN), ("expandable_segments", EXPANDABLE)):
        folder = tmp_path / label
        folder.mkdir()
        m = gpu_budget.peak(in_folder(scenario, folder))  # on a host without CUDA: skipped here, nothing prepared
        assert m.ok and m.info.get("ignored_marks", 0) == 0, (label, m.error, m.info)
        runs[label] = (m, trained(folder))
    info = planned(gpu_budget)
    plan = steps(info)
    longest = [b["longest_s"] for b in plan]
    notes, data = [], {"planned": [[b["clips"], b["longest_s"]] for b in plan]}
    for label, (m, made) in runs.items():
        assert [b["clips"] for b in made] == [b["clips"] for b in plan], label  # FunASR trained what it planned
        assert [s.step for s in m.steps] == list(range(1, len(plan) + 1)), (label, [s.step for s in m.steps])
        allocated, reserved = [s.vram_allocated for s in m.steps], [s.vram_reserved for s in m.steps]
        assert None not in allocated and None not in reserved, label
        reading = read(allocated, reserved, longest)
        seconds = median(m.phases[f"train_step_{k}"].seconds for k in range(2, len(plan)))
        growth = {k: m.growth.get(f"{k}_per_step") for k in ("vram_reserved", "vram_allocated")}
        notes.append(f"{label}: {reading.describe()}; the growth rule's reading (median rise of the running peak over "
                     "the last 5 judged steps): reserved "
                     + ", allocated ".join("n/a" if g is None else f"{g / MiB:.2f} MiB/step" for g in growth.values())
                     + f"; highest reserved {max(reserved) / MiB:.1f} MiB, allocated {max(allocated) / MiB:.1f} MiB; "
                     "per length cycle (steps: reserved / allocated MiB): "
                     + "; ".join(f"{c.first}-{c.last}: {c.reserved / MiB:.1f} / {c.allocated / MiB:.1f}"
                                 for c in reading.cycles)
                     + f"; a step's median {seconds:.3f} s, the run {m.wall_seconds or 0:.0f} s")
        data[label] = {"vram_allocated": allocated, "vram_reserved": reserved, "climbs": reading.climbs,
                       "kept_beyond_allocated": reading.kept, "growth_per_step": growth,
                       "frames": [b["frames"] for b in made], "step_seconds": seconds}
    gpu_budget.note(LONG_RUN, f"FunASR's train_ds.py over the long run's mix ({len(plan)} steps, "
                    f"{len(info['epochs'])} epochs of {info['kept']} clips, {info['long_clips']} over {LONG_S} s; each "
                    "epoch ends in train_ds.py's own torch.cuda.empty_cache()), per step allocated and reserved: "
                    + " | ".join(notes), **data)
