"""A knob whose values are names (an optimizer, a precision): its values have no order memory grows along."""

import re

import pytest

from gpu_budget.search.explore import Envelope, explore

MiB = 2**20
PER_SAMPLE = {"adamw": 500, "sgd": 100}  # MiB per sample of the batch


def peak(knobs):
    return PER_SAMPLE[knobs["optimizer"]] * knobs["batch_size"] * MiB


def test_a_named_knob_is_not_monotone_by_default():
    """Sorted, the names read alphabetically: 'adamw' before 'sgd' is no step up in memory."""
    envelope = Envelope({"batch_size": (1, 8), "optimizer": ["sgd", "adamw"]})
    assert envelope.monotone_knobs() == ("batch_size",)


def test_a_smallest_configuration_that_dies_along_a_named_knob_is_no_proof_that_nothing_fits():
    """adamw at batch 1 dies of memory, sgd at batch 1 and 2 fits. Before, the alphabetically first name made
    batch_size=1, optimizer=adamw the envelope's "smallest" configuration, every knob counted monotone, so the
    exploration said no configuration fits, after one real run."""
    result = explore("named", Envelope({"batch_size": (1, 8), "optimizer": ["sgd", "adamw"]}), 250 * MiB, peak,
                     lambda k: None if peak(k) > 400 * MiB else peak(k), max_real_runs=8)
    assert not any("no configuration fits" in p for p in result.problems), result.summary()
    assert not result.monotonicity  # the names' order is no finding either


def test_a_named_knob_declared_monotone_is_refused_naming_it():
    message = ("monotone knob 'optimizer' has names for values ('adamw', 'sgd'): names have no order memory grows "
               "along (sorted, they read alphabetically); leave it out of monotone=")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        Envelope({"batch_size": (1, 8), "optimizer": ["sgd", "adamw"]}, monotone=("batch_size", "optimizer"))
