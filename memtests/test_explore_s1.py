"""S1 exploration (opt-in): with clips truncated to 5 s, how large a batch fits the budget?

The write-up's fix is truncation; its budget is Colab's 12.7 GB of host RAM.
Hypothesis explores batch size and clip length on the estimator's prediction
(estimate + an offset from one real run), steering to the worst case; the
worst case, the boundary along the batch size (at the worst case's clip
length) and the smallest configuration over budget are then measured in real
isolated runs, at most six. The envelope crosses the budget on purpose: the
boundary is the finding. Beyond the 5 s cap longer clips cost the steps
nothing, so memory is flat (not falling) along clip_seconds there.

    pytest --gpu-budget --gpu-budget-explore memtests/test_explore_s1.py
"""

import pytest
from s1_wav2vec2.scenarios import AS_REPORTED
from test_s1_wav2vec2 import BUDGET as S1_BUDGET

from gpu_budget.search.explore import Envelope

FIXED = AS_REPORTED.with_fixes("truncate")
# host RAM, where the step trains on the CPU; S1 has no VRAM figure, so on a CUDA host there is nothing to explore
BUDGET = {"ram": {"tiny": S1_BUDGET["ram"]["tiny"], "real": "12.7 GiB"}, "cuda": {"ram": None}}
ENVELOPE = Envelope({"batch_size": (1, 16), "clip_seconds": (1, 30)})  # 16 train clips: batch 16 is all of them
MAX_REAL_RUNS = 6


@pytest.mark.gpu_budget(**BUDGET)
def test_explore_batch_and_clip_length(gpu_budget):
    result = gpu_budget.explore(FIXED, ENVELOPE, boundary="batch_size", max_real_runs=MAX_REAL_RUNS)
    print("\n".join(result.summary()))
    assert not result.problems and len(result.real_runs) <= MAX_REAL_RUNS, result.summary()
    boundary, budget = result.boundary, result.budget
    assert boundary.value is not None, result.summary()  # batch 1 fits: the fixed run is within budget
    assert boundary.peaks[boundary.value] <= budget
    above = boundary.peaks.get(boundary.value + 1)  # a run that died of memory (None) is over the budget
    assert boundary.value == 16 or above is None or above > budget  # bracketed by real runs
    worst = result.worst.measured
    assert worst is None or worst >= max(p for p in boundary.peaks.values() if p is not None)
