"""S5's scenarios: the generic large-model OOM write-up at batch 32, and its fixes.

The fixes are listed once, in `supports`: generic ones by name, S5's own as the Fix objects of fixes.py.
"""

from dataclasses import replace

from gpu_budget import Scenario
from gpu_budget.estimate import register

from .fixes import FREEZE_FP32, PRUNING, QUANTIZATION

S5 = Scenario(
    name="s5_generic_oom",
    run="s5_generic_oom.runner:run",
    params={"batch_size": 32, "steps": 4, "classes": 10, "seed": 0},
    scales={
        "tiny": {"image": 128, "width": 16, "hidden": 2048, "steps": 2},  # the peak is step 2's (below)
        "real": {"image": 224, "width": 64, "hidden": 4096, "classes": 1000},
    },
    supports=("smaller_batch", "amp", QUANTIZATION, PRUNING, FREEZE_FP32),
)

# Tiny takes 2 steps: step 1 allocates AdamW's state, and every later step peaks where step 2 does. In every
# committed tiny report of 3 or 4 steps, CPU and H100 (host RAM, allocated and reserved VRAM), steps 3 and 4 peak
# where step 2 does (each report row's `steps`). Two steps give no growth slope (docs/measuring.md).
register(S5.run, "s5_generic_oom.estimate:build")  # the estimator's model of the runner (estimate.py)

# accelerate's find_executable_batch_size on the same step, from batch 64, on the allocator capped at a budget
# (find_batch.py: the test sets vram_cap). CUDA only: the cap is the caching allocator's. Each try is runner.run,
# so the same fixes apply (S5's supports).
FIND_BATCH = replace(
    S5,
    name="s5_find_batch",
    run="s5_generic_oom.find_batch:run",
    params={**S5.params, "find_batch_from": 64},
    scales={name: {**over, "needs_cuda": True} for name, over in S5.scales.items()},
)
