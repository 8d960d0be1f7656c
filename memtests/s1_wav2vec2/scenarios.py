"""S1's scenarios (seed 000: wav2vec2 audio classification, host RAM blow-up): what the memtests gate.

S1 is the configuration as reported: 20 clips of 5 s (16 train / 4 eval),
batch 1, gradient accumulation 4, 3 epochs with an eval each, fp16=True (a
no-op on CPU). Its real scale stops after 4 optimizer steps (one epoch and its
eval) to keep a CPU run near two minutes; the step peak is steady from step 2.
The tiny as-reported run takes 4 steps of one micro-batch each (below).
AS_REPORTED is the same run on long untruncated clips: the write-up gives no
clip length, and without truncation the peak grows faster than linearly with it.

The model dimensions live here, not in the runner, so importing this file
(in the pytest process) does not import torch. Each Scenario lists the fixes
its runner honours once, in `supports`: generic ones by name, S1's own as the
Fix objects of fixes.py.
"""

from dataclasses import replace

from gpu_budget import Scenario
from gpu_budget.estimate import register

from .fixes import FREEZE_FEATURE_ENCODER, SHARED_MEMORY

# wav2vec2-base dims (also Wav2Vec2Config's defaults) and a tiny stand-in with the same shape of model.
REAL_MODEL = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
              "intermediate_size": 3072, "conv_dim": [512] * 7}
TINY_MODEL = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
              "conv_dim": [32] * 7, "num_conv_pos_embeddings": 16, "num_conv_pos_embedding_groups": 4,
              "classifier_proj_size": 32}


S1 = Scenario(
    name="s1_wav2vec2",
    prepare="s1_wav2vec2.runner:prepare",
    run="s1_wav2vec2.runner:run",
    params={
        "n_clips": 20, "n_eval": 4, "n_labels": 5, "checkpoint_labels": 50,
        "sampling_rate": 16000, "clip_seconds": 5, "max_seconds": 1,  # max_seconds: the truncate fix's cap
        "batch_size": 1, "gradient_accumulation_steps": 4, "num_train_epochs": 3,
        "learning_rate": 2e-5, "weight_decay": 0.01, "fp16": True, "max_steps": None, "seed": 42,
    },
    scales={
        "tiny": {"model": TINY_MODEL},
        "real": {"model": REAL_MODEL, "max_steps": 4},
    },
    # the fixes the runner honours, in the order the remediation search breaks cost ties
    supports=("truncate", "lazy_data", FREEZE_FEATURE_ENCODER, "lora", "gradient_checkpointing",
              "load_in_8bit", "load_in_4bit", "gc_collect", "low_cpu_mem_usage"),
    # the checkpoint and the clips: every fix and Trainer knob reuses them
    prepared_from=("model", "checkpoint_labels", "n_clips", "n_labels", "clip_seconds", "sampling_rate", "file_rate",
                   "seed"),
)

# As reported: untruncated long clips (the write-up gives no length; its first fix is truncation to
# max_seconds). Real scale: 50 s clips cross 12.7 GiB (FINDINGS.md gives the measured peaks by clip length), one step.
# Tiny scale: 20 s clips. test_s1_script.py's budget sits between this peak and the truncated script's; at 15 s
# (tried) the two came too close for it. Longer clips cost the gate time: attention is quadratic in the frames.
# Tiny takes one micro-batch per optimizer step, not the seed's 4 accumulated: the peak is one micro-batch's
# activations plus the held gradients (test_what_drives_ram measures accumulation 1, 4 and 8: FINDINGS.md), and a
# quarter of the micro-batches is a quarter of a step's time.
# Four optimizer steps: the fewest that give a growth slope (three steady points, the first step left out).
AS_REPORTED = replace(S1, scales={
    "tiny": {"model": TINY_MODEL, "clip_seconds": 20, "max_steps": 4, "gradient_accumulation_steps": 1},
    "real": {"model": REAL_MODEL, "clip_seconds": 50, "max_steps": 1},
}).with_params(max_seconds=5)

# The worker blow-up: a runner with DataLoader workers whose mapped dataset is held in memory as Python objects
# (Dataset.to_list(), as a hand-written torch Dataset holds it), each worker ending up with a copy of what it
# reads (forked: copied on reading, by the refcount writes; spawned: pickled whole). The tree figure sees it; the
# main process's VmHWM never did. Its own fixes come first: the scenario's others apply as well. Its tiny run
# accumulates 2 micro-batches: the workers read and copy twice the clips one would, which keeps the one-worker fix's
# tree figure over the budget by a margin the tree's spread cannot close (at 1, measured: 20 MiB over, not 60).
WORKERS = replace(AS_REPORTED, name="s1_wav2vec2_workers",
                  scales={"tiny": {**AS_REPORTED.scales["tiny"], "gradient_accumulation_steps": 2}},
                  supports=("fewer_workers", SHARED_MEMORY, *S1.supports)).with_params(dataloader_workers=4,
                                                                                       in_memory=True)

register(S1.run, "s1_wav2vec2.estimate:build")  # the estimator's model of the runner (estimate.py)
