"""S5 exploration within a card (opt-in): how large a batch and image fit the card a user trains on?

The write-up names no card, so the test chooses one: Colab's T4 at real scale, and a 1 GiB card at tiny scale, where
the as-reported batch of 32 sits near its edge. The budget is the card's memory less the context allowance
(model/card.py) as allocated VRAM. On a host without a GPU the search stands on the estimator's CUDA mode alone:
Hypothesis finds the worst case and the smallest configuration over the card, and the boundary along the batch
size is estimated; nothing is verified, and the report says so. On a GPU host every real run is capped as on the
card, the boundary is bracketed by real runs under the cap (a run that dies of out-of-memory there is over), and
the report gives the estimate's error at the boundary.

    pytest --gpu-budget --gpu-budget-explore memtests/test_explore_s5.py
"""

import pytest
from s5_generic_oom.scenarios import S5

from gpu_budget.search.explore import Envelope

CARD = {"tiny": "1 GiB", "real": "T4"}
ENVELOPE = Envelope({"batch_size": (1, 256), "image": [64, 96, 128, 160, 192, 224]})
MAX_REAL_RUNS = 6


@pytest.mark.gpu_budget(card=CARD, cpu={"ram": None})
def test_explore_batch_and_image_within_a_card(gpu_budget):
    result = gpu_budget.explore(S5, ENVELOPE, boundary="batch_size", max_real_runs=MAX_REAL_RUNS)
    print("\n".join(result.summary()))
    assert not result.problems, result.summary()
    assert result.card is not None and result.metric == "vram_allocated"
    boundary, budget = result.boundary, result.budget
    assert result.worst.predicted > budget  # the envelope crosses the card on purpose: the boundary is the finding
    if not result.verified:  # no GPU: the estimate alone, no real run
        assert gpu_budget.device == "cpu" and not result.real_runs and boundary.predicted_value is not None
        return
    value = boundary.value
    assert value is not None and boundary.peaks[value] <= budget and result.boundary_error is not None
    assert value == 256 or boundary.peaks[value + 1] is None or boundary.peaks[value + 1] > budget
