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
        script.step()  # the block began another phase: its end ends it, as the meter's block's does
    with pytest.raises(RuntimeError), script.phase("save"):
        raise RuntimeError("disk full")  # the phase stays open, as a plain mark's would
    marking.stop()
    assert [p.name for p in marking.phases] == ["load", "eval", "train_step_1", "save"]  # no "after": nothing added


def _spike():
    """What a runner does after its blocks: 64 MiB touched, past the meter's noise, so "after <block>" is kept."""
    held = bytearray(64 << 20)
    del held


def _by_meter(meter):
    with meter.phase("outer"), meter.phase("inner"):
        pass
    _spike()
    with meter.phase("eval"):
        meter.start("train_step_1", 1)
    _spike()


def _by_script():
    with script.phase("outer"), script.phase("inner"):
        pass
    _spike()
    with script.phase("eval"):
        script.step()
    _spike()


@pytest.mark.skipif(not can_reset_hwm(), reason="needs /proc/self/clear_refs (Linux)")
def test_one_runner_written_with_either_block_gets_the_same_phases(marking):
    """A runner nesting blocks, or marking a step in one, was named otherwise by gpu_budget.phase (its end began
    nothing where the block left another phase open: 'after inner' ran on past the outer block) than by
    ctx.meter.phase ('after outer'), and a baseline recorded one way failed the other."""
    _by_script()
    marking.stop()
    meter = Meter(use_cuda=False)
    _by_meter(meter)
    meter.stop()
    meter.close()
    expected = ["outer", "inner", "after outer", "eval", "train_step_1", "after eval"]
    assert ([p.name for p in marking.phases], [p.name for p in meter.phases]) == (expected, expected)


def test_outside_the_gate_a_block_does_nothing_and_a_plain_mark_is_unchanged():
    script.mark_with(None)
    with script.phase("load") as inside:
        assert inside is None
    script.phase("train_setup")  # a plain call, its result unused
