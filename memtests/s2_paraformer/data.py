"""S2's clips and batches, as the runner feeds them and the estimator plans its heaviest step from them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .model import RATE

FRAMES_PER_SECOND = 100  # 10 ms fbank frames: the unit of FunASR's dynamic batch budget


def clip_plan(p: dict) -> list[float]:
    """Clip lengths in arrival order: mixed short clips, then the long (> 15 s) ones, so growth shows late."""
    rng = np.random.default_rng(p["seed"])
    short = rng.uniform(*p["short_seconds"], size=p["clips"] - p["long_clips"])
    long = rng.uniform(*p["long_seconds"], size=p["long_clips"])
    return np.concatenate([short, long]).round(2).tolist()


def token_count(seconds: float, p: dict) -> int:
    """Tokens of a clip's transcript: params['tokens_per_second'], at least one."""
    return max(1, round(seconds * p["tokens_per_second"]))


def pieces(wave: np.ndarray, tokens: list[int], p: dict, has: Callable[[str], bool]) -> list[tuple[np.ndarray, list]]:
    """One clip as the run feeds it: whole, or (max_duration) cut into equal pieces, tokens shared out in proportion."""
    if not has("max_duration") or len(wave) <= p["max_seconds"] * RATE:
        return [(wave, tokens)]
    n = int(np.ceil(len(wave) / (p["max_seconds"] * RATE)))
    waves, toks = np.array_split(wave, n), np.array_split(np.array(tokens), n)
    return [(w, t.tolist() or tokens[:1]) for w, t in zip(waves, toks)]


def frames(samples: int) -> int:
    """10 ms frames of a clip of `samples` samples: what FunASR's dynamic batch budget counts."""
    return round(samples / RATE * FRAMES_PER_SECOND)


def make_batches(frame_counts: list[int], p: dict, has: Callable[[str], bool]) -> list[list[int]]:
    """Clip indices per batch: FunASR's dynamic packing (max length x count <= budget) or a fixed size."""
    order = sorted(range(len(frame_counts)), key=frame_counts.__getitem__) if has("length_bucketing") \
        else range(len(frame_counts))
    if has("fixed_batch"):
        order, size = list(order), p["batch_size"]
        return [order[i:i + size] for i in range(0, len(order), size)]
    batches, batch, longest = [], [], 0
    for i in order:
        if batch and max(longest, frame_counts[i]) * (len(batch) + 1) > p["batch_frames"]:
            batches.append(batch)
            batch, longest = [], 0
        batch.append(i)
        longest = max(longest, frame_counts[i])
    return batches + [batch] if batch else batches
