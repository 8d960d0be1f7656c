"""The GPU-free estimator: one training step run on fake tensors, its live storages counted.

step.py runs a builder's step under the tracker (tracker.py) in the fake world
(fake.py; a checkpoint loaded by from_pretrained read as fakes, checkpoint.py),
with CUDA's differences modelled on request (cuda.py) and
bitsandbytes layers stood in for (quant.py); builders.py maps a scenario to its
builder; figures.py holds what an estimate says (the Estimate, its phases and
steps); validate.py puts real measured runs beside the estimates; cli.py is
`python -m gpu_budget estimate`, its rows and file in rows.py, its markdown in
tables.py. Importing this package does not import torch.
"""

from gpu_budget.estimate.builders import batch_size, register
from gpu_budget.estimate.figures import Estimate
from gpu_budget.estimate.step import StepPlan, adamw, estimate, estimate_scenario

__all__ = ["Estimate", "StepPlan", "adamw", "batch_size", "estimate", "estimate_scenario", "register"]
