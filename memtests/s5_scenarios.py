"""S5 scenario definitions: the generic large-model OOM write-up at batch 32, and its fixes."""

from gpu_budget import Scenario

S5 = Scenario(
    name="s5_generic_oom",
    run="gpu_budget.scenarios.s5_generic_oom:run",
    params={"batch_size": 32, "steps": 4, "classes": 10, "seed": 0},
    scales={
        "tiny": {"image": 128, "width": 16, "hidden": 2048},
        "real": {"image": 224, "width": 64, "hidden": 4096, "classes": 1000},
    },
    supports=("smaller_batch", "amp", "quantization", "pruning", "freeze_fp32"),
)
