"""`with gpu_budget.phase(...)`: a script's mark works as a block too, as a function case's ctx.meter.phase does.

It once failed inside the gate and out with "'NoneType' object does not support the context manager protocol"."""

import pytest

from gpu_budget import script
from gpu_budget.measure.meter import Meter, can_reset_hwm


@pytest.fixture
def marking():
    """A meter the script's marks start, as in a function case's measured child; unhooked after."""
    meter = Meter(use_cuda=False)
    script.mark_with(meter.start)
    yield meter
    script.mark_with(None)
    meter.close()


@pytest.mark.skipif(not can_reset_hwm(), reason="needs /proc/self/clear_refs (Linux)")
def test_a_block_ends_its_phase_as_the_meters_block_does(marking):
    with script.phase("load"):
        pass
    with script.phase("eval"):
        script.step()  # the block began another phase: its end begins nothing
    with pytest.raises(RuntimeError), script.phase("save"):
        raise RuntimeError("disk full")  # the phase stays open, as a plain mark's would
    marking.stop()
    assert [p.name for p in marking.phases] == ["load", "after load", "eval", "train_step_1", "save"]


def test_outside_the_gate_a_block_does_nothing_and_a_plain_mark_is_unchanged():
    script.mark_with(None)
    with script.phase("load") as inside:
        assert inside is None
    script.phase("train_setup")  # a plain call, its result unused
