"""ctx.meter.info refuses the gate's own fact names from the runner, by every way a dict is written, and keeps them for
the gate: a runner's `info["card"] = ...` stood in for the cap its child ran under."""

import pytest

from gpu_budget.measure.facts import RunnerFacts
from gpu_budget.measure.meter import Meter


@pytest.mark.parametrize("write", [
    lambda info: info.__setitem__("card", "80 GiB"),
    lambda info: info.update({"kept": 1, "notes": "hello"}),
    lambda info: info.update(malloc="mine"),
    lambda info: info.setdefault("nvml_method", "mine"),
    lambda info: info.__delitem__("tensor_bytes"),
])
def test_a_gate_fact_name_is_refused_naming_it(write):
    info = RunnerFacts()
    info.gate("tensor_bytes", "not counted")
    with pytest.raises(ValueError, match=r"ctx\.meter\.info (took|lost) a fact named '\w+': a name of the gate's own"):
        write(info)
    assert info.get("tensor_bytes") == "not counted"
    assert set(info) <= {"tensor_bytes", "kept"}


def test_the_runners_facts_and_the_gates_read_back_as_one_mapping():
    meter = Meter(use_cuda=False, tree=False)
    meter.info["trainable_params"] = 7
    meter.info.setdefault("first_loss", 2.5)
    meter.info.gate("card", "capped")
    assert {**meter.info} == {"trainable_params": 7, "first_loss": 2.5, "card": "capped"}
    del meter.info["first_loss"]
    assert dict(meter.info) == {"trainable_params": 7, "card": "capped"}
