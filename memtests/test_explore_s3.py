"""S3 exploration (opt-in): training only the new token rows, how large a batch and text fit the budget?

The fix (trainable_token_indices) keeps the resized embeddings frozen but for
the new rows; what still grows is the batch, the text length (the logits over
the real 156,032-token vocabulary) and the number of added tokens.
Hypothesis explores the three on the estimator's prediction; the worst case,
the boundary along the batch size and the smallest configuration over budget
are confirmed by real isolated runs, at most six. The envelope crosses the
budget on purpose: the boundary is the finding.

    pytest --gpu-budget --gpu-budget-explore memtests/test_explore_s3.py
"""

import pytest
from cards import CARDS
from s3_qwen2_audio.scenarios import TOKEN_ROWS

from gpu_budget.search.explore import Envelope

# host RAM at tiny scale on a CPU host; the write-up's 24 GB card at real scale (GB: 10^9 bytes, below the card's
# total memory as CUDA reports it); no figure for the tiny model on a GPU
BUDGET = {"cpu": {"ram": {"tiny": "2 GiB"}}, "cuda": {"vram": {"real": "24 GB"}}}
ENVELOPE = Envelope({"batch_size": (1, 8), "text_len": (16, 256), "added_tokens": (1, 2000)})
MAX_REAL_RUNS = 6


@pytest.mark.gpu_budget(**BUDGET)
def test_explore_batch_text_and_added_tokens(gpu_budget):
    result = gpu_budget.explore(TOKEN_ROWS, ENVELOPE, boundary="batch_size", max_real_runs=MAX_REAL_RUNS)
    print("\n".join(result.summary()))
    assert not result.problems and len(result.real_runs) <= MAX_REAL_RUNS, result.summary()
    boundary, budget = result.boundary, result.budget
    assert result.worst.measured is None or result.worst.measured > budget  # the envelope crosses it
    value = boundary.value
    if value is not None:
        assert boundary.peaks[value] <= budget
    if value is None or value < 8:  # bracketed by real runs from above
        above = 1 if value is None else value + 1
        peak = boundary.peaks[above]
        assert peak is None or peak > budget


@pytest.mark.gpu_budget(card=CARDS["s3"], cpu={"ram": None})
def test_explore_within_the_3090(gpu_budget):
    """The same knobs within the write-up's RTX 3090 (memtests/cards.py: its proportional card at tiny scale), as
    allocated VRAM: on a host without a GPU the estimator's CUDA mode alone (nothing verified), on a GPU host real
    runs under the card's cap bracket the boundary and the report gives the estimate's error there."""
    result = gpu_budget.explore(TOKEN_ROWS, ENVELOPE, boundary="batch_size", max_real_runs=MAX_REAL_RUNS)
    print("\n".join(result.summary()))
    assert not result.problems and result.card is not None and result.metric == "vram_allocated", result.summary()
    boundary, budget = result.boundary, result.budget
    if not result.verified:
        assert gpu_budget.device == "cpu" and not result.real_runs and boundary.predicted_value is not None
        return
    value = boundary.value
    assert value is None or boundary.peaks[value] <= budget
    above = boundary.peaks.get(1 if value is None else value + 1)  # the next batch up: over, or died under the cap
    assert value == 8 or above is None or above > budget
