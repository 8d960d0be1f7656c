"""S5 trained for its real run's length: host RAM growth per step, judged by the growth rule (steps=). CPU.

On a CPU host nothing else in the gate reads growth per step: a leak is
caught there only through a short run's peak, and a leak of a MiB or two a
step moves a short run's peak by less than its baseline's tolerance while
it is gigabytes by the end of a real run. This case runs S5's loop at the
write-up's own fix, batch 32 -> 16 (a batch that fits S5's tiny budget), for
44 optimizer steps, and declares the real run's length, so the gate projects
the growth of its last judged steps to it (docs/declaring.md, `steps=`).

Why 44 steps: a run of 43 or more is read in blocks of 4 judged steps too,
each allowed a quarter of a step's clean allowance per step, so a leak of
half a MiB a step (section 5i's planted one) fails here, where a 12-step run,
read step by step alone, reads it as steady; each step adds well under a
second to the gate. Its data holds 12 batches, which the steps go round as
epochs do, so its data phase holds what a 12-step run's does.

Why S5: its steps repeat one shape (the images are made before the first
step), so a clean run's steps read no growth; S2's dynamic batches change
shape step by step by design and S1's Trainer script grows in lumps
(benchmarks/RESULTS.md, section 5c). The clean and planted runs' readings,
per run, and the margin both ways are RESULTS.md section 5i
(benchmarks/growth_s5.py).

Why 10,000 steps: about three epochs of CIFAR-10's training split at batch 16,
a short real fine-tune of a net this size, and the length the gate's other
`steps=` cases declare. The budget is S5's tiny one.

GPU_BUDGET_PLANT_LEAK_MIB=X makes the loop keep X MiB of each training step's
conv features (the runner's keep_hidden_mib, a loop that keeps each step's
features for a later look): the planted leak section 5i and
tests/integration/test_s5_growth_leak.py run. Pinned to the CPU on any host
(device="cpu"): host RAM of a CPU step is what it gates.
"""

import os
from dataclasses import replace

import pytest
from s5_generic_oom.scenarios import S5
from test_s5_generic_oom import TINY_BUDGET

LEAK_MIB = float(os.environ.get("GPU_BUDGET_PLANT_LEAK_MIB", "0"))  # the planted leak; 0: none
STEPS, BATCH = 44, 16
EPOCH = 12  # the batches its data holds: 44 steps go round them, so its data phase is a 12-step run's
LONG_RUN = replace(S5, name="s5_growth", scales={"tiny": S5.scales["tiny"]}).with_params(
    batch_size=BATCH, steps=STEPS, epoch_steps=EPOCH, keep_hidden_mib=LEAK_MIB)  # tiny only: a real-scale step takes minutes on a CPU


@pytest.mark.gpu_budget(ram={"tiny": TINY_BUDGET}, origin={"tiny": "measured-gap"}, steps={"tiny": 10_000},
                        device="cpu")
def test_growth_over_a_real_run(gpu_budget):
    row = gpu_budget.measure(LONG_RUN, label="batch16")
    assert [s.step for s in row.steps] == list(range(1, STEPS + 1)), row.steps
