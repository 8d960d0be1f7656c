"""model/card.py: a card= value read as a card of the table or a size, per scale, and its bad values named."""

import pytest

from gpu_budget.declare.marks import gpu_budget
from gpu_budget.model.card import CARDS, Card, by_name, pick_card
from gpu_budget.units import GiB


@pytest.mark.parametrize("written", ["RTX 3090", "rtx3090", "RTX-3090", "rtx_3090"])
def test_a_card_of_the_table_is_found_however_it_is_written(written):
    assert by_name(written) == Card("RTX 3090", round(23.69 * GiB))


def test_every_card_of_the_table_holds_less_than_its_nominal_memory():
    """The table holds what CUDA reports (total_memory): under the memory the card is sold with (16 GB on a T4 is
    16 GiB of chips; the driver keeps part of it), within a tenth of it."""
    nominal = {"T4": 16, "L4": 24, "A10G": 24, "RTX 3090": 24, "RTX 4090": 24, "A100 40GB": 40, "A100 80GB": 80,
               "H100 80GB": 80}
    assert set(CARDS) == set(nominal)
    for name, gib in CARDS.items():
        assert 0.9 * nominal[name] < gib < nominal[name], name


def test_a_size_is_a_card_of_that_size_and_each_scale_picks_its_own():
    assert pick_card("24 GiB", "tiny") == Card("24.00 GiB", 24 * GiB)
    assert Card("24.00 GiB", 24 * GiB).label == "a 24.00 GiB card"
    assert by_name("T4").label == "T4 (14.75 GiB)"
    both = {"tiny": "2 GiB", "real": "RTX 3090"}
    assert pick_card(both, "tiny").capacity == 2 * GiB and pick_card(both, "real").name == "RTX 3090"
    assert pick_card({"real": "T4"}, "tiny") is None


def test_a_card_travels_to_a_commands_processes_as_it_is():
    card = by_name("A100 80GB")
    assert Card.from_env(card.to_env()) == card


@pytest.mark.parametrize(("value", "says"), [
    ("24", "card='24' is a bare number: give it a unit"),
    ("RTX 9999", "card='RTX 9999' is neither a known card"),
    ({"tiny": "T4", "real": "nope"}, "card='nope' is neither a known card"),  # every scale is checked
    (24, "card=24: expected a card's name"),
    ("0 GiB", "a card holds some memory"),
])
def test_a_bad_card_is_refused_naming_it(value, says):
    with pytest.raises(ValueError) as caught:
        pick_card(value, "tiny", where="t.py::test")
    assert says in str(caught.value) and str(caught.value).startswith("t.py::test: ")


def test_on_cuda_the_card_is_the_default_vram_budget_and_on_the_cpu_it_changes_nothing():
    on_gpu = gpu_budget(card="T4", host="cuda")
    assert on_gpu.card == by_name("T4") and on_gpu.budget.vram == by_name("T4").capacity and on_gpu.origin == "card"
    assert gpu_budget(card="T4", vram="10 GiB", host="cuda").budget.vram == 10 * GiB  # a declared vram= stands
    on_cpu = gpu_budget(card="T4", ram="1 GiB", host="cpu")
    assert on_cpu.budget.vram is None and on_cpu.budget.ram == GiB


@pytest.mark.parametrize(("host", "given"), [
    ("cuda", {"vram": "20 GiB", "card": "T4"}),
    ("cpu", {"vram": "20 GiB", "card": "T4"}),  # refused on any host, as every bad keyword is
    ("cuda", {"cuda": {"vram": "20 GiB"}, "card": "T4"}),
    ("cuda", {"vram": {"tiny": "1 GiB", "real": "30 GiB"}, "card": {"real": "RTX 3090"}}),  # the real scale's
])
def test_a_vram_budget_above_the_card_is_refused(host, given):
    """Capped as on the card, the allocator never holds more than the card: a larger budget would test nothing (an
    over-budget run dies of out-of-memory under the cap first)."""
    with pytest.raises(ValueError) as caught:
        gpu_budget(**given, host=host, where="t.py::test")
    assert "is above the card" in str(caught.value) and str(caught.value).startswith("t.py::test: ")


def test_a_vram_budget_within_the_card_or_for_the_cpu_alone_stands():
    assert gpu_budget(vram="14 GiB", card="T4", host="cuda").budget.vram == 14 * GiB
    assert gpu_budget(cpu={"vram": "20 GiB"}, card="T4", host="cuda").card == by_name("T4")  # cpu='s never capped
    assert gpu_budget(vram={"tiny": "20 GiB"}, card={"real": "T4"}, host="cuda").budget.vram == 20 * GiB
