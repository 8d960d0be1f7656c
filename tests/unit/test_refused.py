"""declare/refused.py: pytest hides the declaring code's frames for its own refusal only, so a bug there, or an
exception of the user's code a declaration called, keeps its whole traceback."""

import pytest

from gpu_budget import Scenario
from gpu_budget.declare.refused import refusal


def test_a_refusal_of_the_declaring_code_is_hidden():
    with pytest.raises(ValueError, match="expected a non-empty string") as info:
        Scenario(name="", run="m:f")
    assert refusal(info)
    assert all(entry.ishidden(info) for entry in info.traceback if "gpu_budget" in str(entry.path)), info.traceback


def test_an_exception_that_no_raise_of_the_gate_made_keeps_its_frames():
    def users_own():
        return int("x")  # raised in the user's code, not a refusal of the gate's

    with pytest.raises(ValueError) as info:
        users_own()
    assert not refusal(info)
    with pytest.raises(TypeError, match="unhashable") as bare:  # in the gate's code, but raised by no raise of it
        Scenario(name="s", run="m:f").params_for(["tiny"])
    assert not refusal(bare)
    assert not any(entry.ishidden(bare) for entry in bare.traceback), bare.traceback
    assert not refusal(None)
