"""The estimate's real tensors (a batch's ids and masks, made for real: their values are read) are bounded: a
configuration too large is refused by name before it is made, never left to fill the estimating process's RAM."""

import pytest

torch = pytest.importorskip("torch")

from test_estimate import PARAMS, mlp

from gpu_budget.estimate import estimate
from gpu_budget.estimate.fake import EstimateError, fake_world, known_batch
from gpu_budget.search.explore import Envelope, explore

ROWS = 1 << 40  # rows of 256 floats: a PiB, never made


def test_a_batch_too_large_to_make_for_real_is_refused_by_name_before_it_is_made():
    """Before, the estimate made the batch for real: torch.randn(ROWS, 256) in this process ("DefaultCPUAllocator:
    can't allocate memory: you tried to allocate 1125899906842624 bytes" where that fails; where it does not, a
    fill of host RAM until the process dies)."""
    with pytest.raises(EstimateError, match=r"^this configuration would make a 1048576\.00 GiB tensor for real in "
                                            r"the estimating process \(aten\.randn\.generator, shape \(1099511627776, "
                                            r"256\), torch\.float32\), over the 512\.00 MiB the estimator builds for "
                                            r"real \(gpu_budget\.estimate\.real_bound\.REAL_LIMIT"):
        estimate(mlp, {**PARAMS, "batch": ROWS, "micro": 1})


def test_a_batch_whose_tensors_together_pass_the_limit_is_refused_naming_each(monkeypatch):
    monkeypatch.setattr("gpu_budget.estimate.real_bound.REAL_LIMIT", 1 << 20)
    with fake_world() as known:
        assert known_batch(known, lambda: {"ids": torch.zeros(1 << 16, dtype=torch.int64)})["ids"].shape == (65536,)
        with pytest.raises(EstimateError, match=r"^this configuration's batch holds 1\.25 MiB of real tensors in the "
                                                r"estimating process \(ids 512\.00 KiB, mask 768\.00 KiB, lengths 8 B\), "
                                                r"over the 1\.00 MiB"):
            known_batch(known, lambda: {"ids": torch.zeros(1 << 16, dtype=torch.int64),
                                        "mask": torch.ones(3 << 15, dtype=torch.int64), "lengths": torch.tensor([1])})


def test_an_exploration_whose_top_corner_is_too_large_stops_naming_it():
    """The worst-case search's first example is the envelope's top corner: a knob of 1..10**12 rows was made for
    real in the pytest process. The exploration now stops on the refused estimate, naming the configuration."""
    found = explore("huge", Envelope({"batch": (1, ROWS)}), "1 GiB", measure=None, max_examples=2,
                    estimate=lambda k: estimate(mlp, {**PARAMS, "batch": k["batch"], "micro": 1}).step_peak)
    assert found.failed.startswith(f"estimate of batch={ROWS} raised EstimateError: this configuration would make "
                                   "a 1048576.00 GiB tensor for real"), found.summary()
