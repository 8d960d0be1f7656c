"""The several-ranks case study's scenarios: one fine-tune script, launched on 2 ranks three ways.

DDP is the configuration as a user first launches it; FSDP2's sharding is the
fix offered for it (fsdp: resharded after forward; fsdp_keep: the gathered
parameters kept from forward to backward); fsdp_no_shard, FSDP2 with nothing
sharded, is the control that tells sharding's saving from FSDP's machinery. accelerate launch runs the
Accelerator version of the script with its FSDP plugin requested. As launched on a
host without CUDA each of its ranks trains alone; accelerate_use_cpu is the
fix. The model dimensions live here (importing this file does not import torch).
"""

import sys
from pathlib import Path

from gpu_budget import Scenario

from .fixes import ACCELERATE_USE_CPU, FSDP, FSDP_KEEP, FSDP_NO_SHARD

HERE = Path(__file__).resolve().parent
TINY = {"vocab": 4000, "hidden": 256, "intermediate": 768, "layers": 4, "heads": 4}
MODEL_KEYS = tuple(TINY)
RUN = {"steps": 3, "batch_size": 2, "seq_len": 128, "wrap": "ddp", "plant_rank": -1, "plant_mib": 0}

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
DDP = Scenario(
    name="several_ranks",
    command=[*TORCHRUN, "train.py", "--model_dir", "{assets}/model",
             *(a for k in ("wrap", "steps", "batch_size", "seq_len", "plant_rank", "plant_mib") for a in (f"--{k}", f"{{{k}}}"))],
    cwd=str(HERE),
    prepare="several_ranks.prepare:prepare",
    params={**TINY, **RUN},
    scales={"tiny": {}},
    prepared_from=MODEL_KEYS,
    supports=(FSDP, FSDP_KEEP, FSDP_NO_SHARD),
    ranks=2,
)

ACCELERATE = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "2", "--num_machines", "1",
              "--mixed_precision", "no", "--dynamo_backend", "no", "--use_fsdp", "--fsdp_version", "2"]
ACCELERATE_FSDP = Scenario(
    name="several_ranks_accelerate",
    command=[*ACCELERATE, "train_accelerate.py", "--model_dir", "{assets}/model",
             *(a for k in ("steps", "batch_size", "seq_len", "plant_rank", "plant_mib") for a in (f"--{k}", f"{{{k}}}"))],
    cwd=str(HERE),
    prepare="several_ranks.prepare:prepare",
    params={**TINY, **RUN},
    scales={"tiny": {}},
    prepared_from=MODEL_KEYS,
    supports=(ACCELERATE_USE_CPU,),
    ranks=2,
)
