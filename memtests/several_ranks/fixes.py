"""The several-ranks case study's fixes: FSDP2's sharding for DDP's per-rank copies, and accelerate's CPU flag.

Registered on import; scenarios.py lists them.
"""

from gpu_budget import Fix
from gpu_budget.declare import fixes

FSDP = fixes.register(Fix(
    "fsdp", "model", "FSDP2 fully_shard per decoder layer and at the root (each rank holds 1/N of the parameters, "
    "gradients and optimizer state; a layer's parameters gathered while it runs, freed after)",
    params={"wrap": "fsdp"}, proposed_by=(fixes.ADDED_HERE,)))
FSDP_KEEP = fixes.register(Fix(
    "fsdp_keep", "model", "FSDP2 fully_shard with reshard_after_forward=False (the gathered parameters kept from "
    "forward to backward: fewer all-gathers, more memory)", params={"wrap": "fsdp_keep"}, conflicts=("fsdp",),
    proposed_by=(fixes.ADDED_HERE,)))
FSDP_NO_SHARD = fixes.register(Fix(
    "fsdp_no_shard", "model", "FSDP2 fully_shard on a replicate x shard mesh of N x 1: FSDP's machinery with nothing "
    "sharded (FSDP1's NO_SHARD), every rank holding the whole training state: a control for what sharding saves, "
    "not a remedy", params={"wrap": "fsdp_no_shard"}, conflicts=("fsdp", "fsdp_keep"), remedy=False,
    proposed_by=(fixes.ADDED_HERE,)))
ACCELERATE_USE_CPU = fixes.register(Fix(
    "accelerate_use_cpu", "runtime", "ACCELERATE_USE_CPU=true: on a host without CUDA, accelerate's ranks train as "
    "one (MULTI_CPU, gloo) instead of each alone", env={"ACCELERATE_USE_CPU": "true"},
    proposed_by=(fixes.ADDED_HERE,)))
