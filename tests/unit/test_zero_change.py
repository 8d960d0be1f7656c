"""A change that rounds to zero reads "0.0%" in every table, without a sign: "-0.0%" read as a fall, "+0.0%" as a
rise, where nothing moved past the shown digits."""

import pytest

from gpu_budget.against import render
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Measurement, Result, SweepPoint
from gpu_budget.report import findings_pairs, sweep_table, terminal

MiB = 2**20


def _row(change: dict) -> Result:
    measured = Measurement(status="ok", peaks=Peaks(ram=500 * MiB, ram_tree=510 * MiB))
    return Result(nodeid="t.py::test", scenario="s", scale="tiny", verdict="pass", passed=True, message="",
                  measurement=measured, change=change)


@pytest.mark.parametrize("tiny", [-0.0001, 0.0, 0.0004, -0.0])
def test_a_change_that_rounds_to_zero_has_no_sign(tiny):
    assert terminal._change(_row({"ram_tree": tiny, "ram_tensor": 0.02})) == "RAM tree 0.0%, tensors +2.0%"
    point = SweepPoint("torch", "2.10.0", False, "ok", Peaks(ram=100 * MiB), {"ram": tiny})
    assert sweep_table._shown(point, Peaks(ram=100 * MiB), "ram", "") == "0.0%"
    assert render._change(tiny) == "0.0%"


def test_a_change_that_shows_keeps_its_sign():
    assert terminal._change(_row({"ram_tree": -0.001})) == "RAM tree -0.1%"
    assert render._change(0.0005) == "+0.1%" and render._change(-0.012) == "-1.2%"
    assert findings_pairs.bounded_saving(1000, 1000) == "0.0%"
    assert findings_pairs.bounded_saving(100_000, 100_004) == "0.0%"  # -0.004%: once "-0.0%"
    assert findings_pairs.bounded_saving(1000, 900) == "+10.0%"
