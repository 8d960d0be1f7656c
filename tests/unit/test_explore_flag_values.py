"""A knob whose values are flags (gradient checkpointing on or off): False before True is no step up in memory."""

import re

import pytest

from gpu_budget.search.explore import Envelope, explore

MiB = 2**20


def peak(knobs):
    """Checkpointing keeps a quarter of the activations: memory falls from False to True."""
    return int(knobs["batch_size"] * 400 * MiB * (0.25 if knobs["gradient_checkpointing"] else 1))


def test_a_flag_is_not_monotone_by_default():
    envelope = Envelope({"batch_size": (1, 8), "gradient_checkpointing": [False, True]})
    assert envelope.monotone_knobs() == ("batch_size",)


def test_a_smallest_configuration_that_dies_without_a_flag_is_no_proof_that_nothing_fits():
    """Batch 1 without checkpointing dies of memory, with it batch 1 and 2 fit. Before, the flag counted as
    monotone, so the exploration said no configuration fits after one real run, and each step from False to True
    was reported as a drop that makes the estimate suspect."""
    result = explore("flag", Envelope({"batch_size": (1, 8), "gradient_checkpointing": [False, True]}), 250 * MiB,
                     peak, lambda k: None if peak(k) > 300 * MiB else peak(k), max_real_runs=8)
    assert not any("no configuration fits" in p for p in result.problems), result.summary()
    assert not result.monotonicity, result.summary()


def test_a_flag_declared_monotone_is_kept():
    """A user who knows memory grows with the flag on says so."""
    envelope = Envelope({"batch_size": (1, 8), "eval_during_training": [False, True]},
                        monotone=("batch_size", "eval_during_training"))
    assert envelope.monotone_knobs() == ("batch_size", "eval_during_training")


@pytest.mark.parametrize("pair", [(False, True), (True, 8)])
def test_a_pair_of_flags_is_no_integer_range(pair):
    """(False, True) read as the range 0..1 gave the scenario 0 and 1 for its flag; (True, 8) read as 1..8."""
    message = (f"envelope knob 'flag': {pair!r} is a pair that is no integer range: give a range of whole numbers "
               f"(lo, hi), or the values to explore as a list {list(pair)!r}")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        Envelope({"flag": pair})
