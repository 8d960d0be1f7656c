"""S2's scenarios: the Paraformer-large fine-tune whose memory grows under dynamic batching.

Its fixes are listed once, in `supports`: generic ones by name, S2's own as the Fix objects of fixes.py.
"""

from gpu_budget import Scenario
from gpu_budget.estimate import register

from .fixes import FIXED_BATCH, MAX_DURATION

S2 = Scenario(
    name="s2_paraformer",
    prepare="s2_paraformer.runner:prepare",
    run="s2_paraformer.runner:run",
    params={
        "vocab": 8404, "seed": 0, "tokens_per_second": 4,
        "short_seconds": [1, 8], "long_seconds": [16, 30],  # the write-up: 259 clips over 15 s
        "batch_frames": 6000,  # FunASR batch_type "token": padded 10 ms frames per batch
        "batch_size": 4,       # fixed_batch
        "max_seconds": 10,     # max_duration
    },
    scales={
        # tiny: narrow but deep, so the heads x T^2 attention term (what long clips add) dominates
        "tiny": {"hidden": 64, "heads": 4, "ffn": 256, "encoder_blocks": 12, "decoder_blocks": 2,
                 "clips": 24, "long_clips": 4},
        # real: half finetune.sh's frame budget; its 12 clips make six batches (4, 4, 1, 1, 1, 1 clips) to read
        # a per-step series from, where 6000 frames make three (8, 2, 2)
        "real": {"hidden": 512, "heads": 4, "ffn": 2048, "encoder_blocks": 50, "decoder_blocks": 16,
                 "clips": 12, "long_clips": 3, "batch_frames": 3000},
    },
    # the runner's fixes (gradient_checkpointing is honoured as a recorded no-op: FunASR has no switch)
    supports=("length_bucketing", MAX_DURATION, FIXED_BATCH, "gradient_checkpointing", "malloc_trim",
              "empty_cache", "expandable_segments"),
    prepared_from=("vocab", "seed", "tokens_per_second", "short_seconds", "long_seconds", "hidden", "heads", "ffn",
                   "encoder_blocks", "decoder_blocks", "clips", "long_clips"),  # the weights and the clips
)

register(S2.run, "s2_paraformer.estimate:build")  # the estimator's model of the runner (estimate.py)
