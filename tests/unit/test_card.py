"""model/card.py: a card= value read as a card of the table or a size, per scale, and its bad values named."""

from types import SimpleNamespace

import pytest

from gpu_budget import Scenario
from gpu_budget.declare.marks import gpu_budget
from gpu_budget.measure import card_cap
from gpu_budget.measure.device import DeviceInfo
from gpu_budget.model.card import CARDS, SOLD, Card, by_name, on_runner, pick_card
from gpu_budget.session.can_run import unmeasurable, vram_unchecked
from gpu_budget.units import GiB, MiB, format_size


@pytest.mark.parametrize("written", ["RTX 3090", "rtx3090", "RTX-3090", "rtx_3090"])
def test_a_card_of_the_table_is_found_however_it_is_written(written):
    assert by_name(written) == Card("RTX 3090", round(23.69 * GiB))


@pytest.mark.parametrize(("printed", "card"), [
    ("Tesla T4", "T4"), ("T4 16GB", "T4"), ("NVIDIA GeForce RTX 4090", "RTX 4090"), ("RTX 3090 24 GB", "RTX 3090"),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB"), ("NVIDIA A100-PCIE-40GB", "A100 40GB"), ("NVIDIA A100 80GB PCIe", "A100 80GB"),
    ("NVIDIA H100 80GB HBM3", "H100 80GB"), ("NVIDIA L4", "L4"), ("NVIDIA A10G", "A10G"), ("NVIDIA A10", "A10"),
    ("NVIDIA H100 PCIe", "H100 80GB"), ("NVIDIA H100 NVL", "H100 NVL"), ("NVIDIA H200", "H200"),
    ("Tesla V100-SXM2-16GB", "V100 16GB"), ("Tesla V100-PCIE-16GB", "V100 16GB"), ("Tesla V100-SXM2-32GB", "V100 32GB"),
    ("Tesla V100-PCIE-32GB", "V100 32GB"), ("NVIDIA RTX A4000", "RTX A4000"), ("NVIDIA RTX A6000", "RTX A6000"),
    ("NVIDIA L40S", "L40S"), ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"), ("RTX 3060 12GB", "RTX 3060 12GB"),
    ("rtx3080-10gb", "RTX 3080 10GB"), ("RTX A6000 48GB", "RTX A6000"), ("Tesla P100-PCIE-16GB", "P100 16GB"),
    ("Tesla P100-SXM2-16GB", "P100 16GB"),
])
def test_a_card_named_as_torch_or_nvidia_smi_prints_it_is_that_card(printed, card):
    """A user copies the name torch.cuda.get_device_name() or nvidia-smi prints; it was refused ("'Tesla T4' is
    neither a known card"). The maker, product line, form factor and the memory the card is sold with are read past."""
    assert pick_card(printed, "tiny", where="t.py::test").name == card


@pytest.mark.parametrize("other", ["T4 24GB", "NVIDIA H200 NVL", "NVIDIA B200", "RTX 3090 Ti", "A100 40GB 80GB", "A100",
                                   "H100 NVL 80GB", "H100", "NVIDIA A100 PCIe", "V100", "Tesla V100-SXM2",
                                   "Tesla V100S-PCIE-32GB", "NVIDIA GeForce RTX 3060", "RTX 3060 8GB",
                                   "NVIDIA GeForce RTX 3080", "NVIDIA GeForce RTX 3080 Ti", "Quadro RTX 6000", "RTX 6000",
                                   "NVIDIA L40", "P100", "Tesla P100-PCIE-12GB"])
def test_a_printed_name_of_another_card_is_still_refused(other):
    with pytest.raises(ValueError):
        pick_card(other, "tiny", where="t.py::test")


def test_every_card_of_the_table_holds_less_than_its_nominal_memory():
    """The table holds what CUDA reports (total_memory): under the memory the card is sold with (16 GB on a T4 is
    16 GiB of chips; the driver keeps part of it), within a tenth of it."""
    assert set(CARDS) == set(SOLD)
    for name, gib in CARDS.items():
        assert 0.9 * SOLD[name] < gib < SOLD[name], name


def test_a_size_is_a_card_of_that_size_and_each_scale_picks_its_own():
    assert pick_card("24 GiB", "tiny") == Card("24.00 GiB", 24 * GiB)
    assert Card("24.00 GiB", 24 * GiB).label == "a 24.00 GiB card"
    assert by_name("T4").label == "T4 (14.75 GiB)"
    both = {"tiny": "2 GiB", "real": "RTX 3090"}
    assert pick_card(both, "tiny").capacity == 2 * GiB and pick_card(both, "real").name == "RTX 3090"
    assert pick_card({"real": "T4"}, "tiny") is None


def test_a_bad_card_of_a_per_scale_mapping_names_its_scale():
    """Every scale's card is read (a typo fails on any scale), so the message says which scale's it is."""
    with pytest.raises(ValueError) as caught:
        pick_card({"tiny": "4 GiB", "real": "RTX 3900"}, "tiny", where="t.py::test")
    assert str(caught.value).startswith("t.py::test: card='RTX 3900' is neither a known card")
    assert str(caught.value).endswith("(given for scale 'real')"), caught.value
    with pytest.raises(ValueError) as alone:
        pick_card("RTX 3900", "tiny", where="t.py::test")
    assert "given for scale" not in str(alone.value)


def test_a_card_travels_to_a_commands_processes_as_it_is():
    card = by_name("A100 80GB")
    assert Card.from_env(card.to_env()) == card


@pytest.mark.parametrize(("value", "says"), [
    ("24", "card='24' is a bare number: give it a unit"),
    ("RTX 9999", "card='RTX 9999' is neither a known card"),
    ({"tiny": "T4", "real": "nope"}, "card='nope' is neither a known card"),  # every scale is checked
    (24, "card=24: expected a card's name"),
    ("0 GiB", "card='0 GiB' is 0 B: a card holds some memory"),
    ("-24 GiB", "card='-24 GiB' is a negative size: a card holds some memory"),
    (" -0.5MiB", "card=' -0.5MiB' is a negative size: a card holds some memory"),
])
def test_a_bad_card_is_refused_naming_it(value, says):
    with pytest.raises(ValueError) as caught:
        pick_card(value, "tiny", where="t.py::test")
    assert says in str(caught.value) and str(caught.value).startswith("t.py::test: ")


@pytest.mark.parametrize(("value", "sold"), [
    ("24GB", "L4, A10, A10G, RTX 3090, RTX 4090"), ("16 GB", "T4, RTX A4000, V100 16GB, P100 16GB"), ("80GB", "A100 80GB, H100 80GB"),
    ("48GB", "L40S, RTX 6000 Ada, RTX A6000"), ("12GB", "RTX 3060 12GB"),
])
def test_a_card_given_as_what_cards_are_sold_with_is_refused_naming_them(value, sold):
    """card="24GB" was a card of 24*10**9 bytes, more than a GiB under what CUDA reports of an RTX 3090 or 4090: a case
    that fits such a card would have died of out-of-memory under that cap."""
    with pytest.raises(ValueError) as caught:
        pick_card(value, "tiny", where="t.py::test")
    said = str(caught.value)
    assert said.startswith(f"t.py::test: card={value!r} reads as ") and f"is what {sold} " in said, said
    assert "name the card" in said and f'"{CARDS["RTX 3090"]:.2f} GiB"' in said, said


@pytest.mark.parametrize("value", ["24259MB", "24259 MB", "23690 mb", "0.5 TB"])
def test_a_card_in_powers_of_ten_is_refused(value):
    """torch's device properties print an RTX 3090's total_memory in MiB written "MB": copied as card="24259MB" it
    was read as 10**6-byte MB, a smaller card than the 3090 by the ratio of a MiB to a MB."""
    with pytest.raises(ValueError) as caught:
        pick_card(value, "tiny", where="t.py::test")
    assert f"card={value!r} reads as " in str(caught.value) and "are MiB" in str(caught.value), str(caught.value)


@pytest.mark.parametrize(("value", "capacity"), [
    ("24259 MiB", 24259 * MiB), ("23.69 GiB", round(23.69 * GiB)), ("25436943811 B", 25436943811),
])
def test_a_card_in_powers_of_two_or_bytes_stands(value, capacity):
    assert pick_card(value, "tiny").capacity == capacity


@pytest.mark.parametrize(("value", "says"), [
    ("4090", 'card=\'4090\' is a bare number: did you mean "RTX 4090"?'),
    ("H100", 'card=\'H100\' is not a card of the table: did you mean "H100 80GB" or "H100 NVL"?'),
    ("a100", 'card=\'a100\' is not a card of the table: did you mean "A100 40GB" or "A100 80GB"?'),
    ("V100", 'card=\'V100\' is not a card of the table: did you mean "V100 16GB" or "V100 32GB"?'),
    ("NVIDIA GeForce RTX 3060", 'is not a card of the table: did you mean "RTX 3060 12GB"?'),
    # with the memory it is sold with, as "T4 16GB" is read: "neither a known card nor a size" named no card
    ("4090 24GB", 'card=\'4090 24GB\' is not a card of the table: did you mean "RTX 4090"?'),
    ("3090-24gb", 'card=\'3090-24gb\' is not a card of the table: did you mean "RTX 3090"?'),
    ("RTX 6000", ('card=\'RTX 6000\' is not a card of the table: did you mean "RTX 6000 Ada"? (or the Quadro RTX 6000, '
                  '24 GB, which the table does not hold')),
])
def test_a_card_written_short_is_refused_naming_the_cards_it_may_mean(value, says):
    """A user writes the card as they call it ("4090", "H100"): the error names the table's cards it may mean, never
    a size it cannot mean ("4090 GiB")."""
    with pytest.raises(ValueError) as caught:
        pick_card(value, "tiny", where="t.py::test")
    assert says in str(caught.value) and "4090 GiB" not in str(caught.value), str(caught.value)


def test_on_cuda_the_card_is_the_default_vram_budget_and_on_the_cpu_it_changes_nothing():
    on_gpu = gpu_budget(card="T4", host="cuda")
    assert on_gpu.card == by_name("T4") and on_gpu.budget.vram == by_name("T4").capacity and on_gpu.origin == "card"
    assert gpu_budget(card="T4", vram="10 GiB", host="cuda").budget.vram == 10 * GiB  # a declared vram= stands
    on_cpu = gpu_budget(card="T4", ram="1 GiB", host="cpu")
    assert on_cpu.budget.vram is None and on_cpu.budget.ram == GiB


def test_on_a_host_without_cuda_a_card_alone_is_said_to_go_unchecked():
    """A case with card= alone passed on a CPU host with nothing said of its card (budget "-"), where a VRAM budget of
    the same memory said "not checked"."""
    cpu = DeviceInfo(cuda=False)
    said = vram_unchecked(gpu_budget(card="T4", host="cpu"), cpu)
    assert said is not None and said.startswith(f"card='T4' (on CUDA, its cap and the VRAM budget "
                                                f"{format_size(by_name('T4').capacity)}) not checked: "), said
    assert vram_unchecked(gpu_budget(card="T4", host="cuda"), DeviceInfo(cuda=True, gpu_memory=80 * GiB)) is None
    assert vram_unchecked(gpu_budget(card="T4", vram="10 GiB", host="cpu"), cpu).startswith("VRAM budget 10.00 GiB")


@pytest.mark.parametrize(("host", "given", "says"), [
    ("cuda", {"vram": "20 GiB", "card": "T4"}, "vram budget '20 GiB' (20.00 GiB) at scale 'tiny'"),
    ("cpu", {"vram": "20 GiB", "card": "T4"}, "vram budget '20 GiB'"),  # refused on any host, as every bad keyword is
    ("cuda", {"cuda": {"vram": "20 GiB"}, "card": "T4"}, "cuda['vram'] budget '20 GiB'"),  # where it was given
    ("cuda", {"vram": {"tiny": "1 GiB", "real": "30 GiB"}, "card": {"real": "RTX 3090"}},  # the real scale's
     "vram budget '30 GiB' (30.00 GiB) at scale 'real'"),
    ("cuda", {"vram": "26GB", "card": "RTX 3090"}, "vram budget '26GB' (24.21 GiB) at scale 'tiny'"),  # as written
])
def test_a_vram_budget_above_the_card_is_refused(host, given, says):
    """Capped as on the card, the allocator never holds more than the card: a larger budget would test nothing (an
    over-budget run dies of out-of-memory under the cap first). The budget is quoted as written, and as read."""
    with pytest.raises(ValueError) as caught:
        gpu_budget(**given, host=host, where="t.py::test")
    assert str(caught.value).startswith(f"t.py::test: {says}") and "is above the card" in str(caught.value)


def test_a_vram_budget_within_the_card_or_at_a_scale_the_card_does_not_cap_stands():
    assert gpu_budget(vram="14 GiB", card="T4", host="cuda").budget.vram == 14 * GiB
    assert gpu_budget(vram={"tiny": "20 GiB"}, card={"real": "T4"}, host="cuda").budget.vram == 20 * GiB


# An H100 80GB whose torch prints "total capacity of 79.11 GiB": CUDA's own figure, under the table's 79.11 GiB as
# bytes (torch rounds to the hundredth of a GiB, the table holds what it prints)
H100_TOTAL = round(79.107 * GiB)


class _Cuda:
    """The torch.cuda calls card_cap.cap makes, on a device of H100_TOTAL bytes holding a 500 MiB context."""

    fraction = None

    def get_device_properties(self, device):
        return SimpleNamespace(total_memory=H100_TOTAL)

    def memory_reserved(self, device):
        return 0

    def mem_get_info(self, device):
        return H100_TOTAL - 500 * MiB, H100_TOTAL

    def set_per_process_memory_fraction(self, fraction, device):
        self.fraction = fraction


def test_a_card_named_as_the_gpu_it_runs_on_runs_there_under_the_gpus_own_memory():
    """card="H100 80GB" on an H100 80GB: its capacity (79.11 GiB, as torch prints it) is a few MiB over the GPU's
    own figure, within the hundredth of a GiB the figure is printed to. It is that GPU, capped at its own memory,
    not skipped as a bigger card nor refused by the cap."""
    card = by_name("H100 80GB")
    assert format_size(H100_TOTAL) == format_size(card.capacity) and card.capacity > H100_TOTAL
    h100 = DeviceInfo(cuda=True, gpu_name="NVIDIA H100 80GB HBM3", gpu_memory=H100_TOTAL, gpus=1)
    scenario = Scenario(name="s", run="m:run")
    assert unmeasurable(scenario, gpu_budget(card="H100 80GB", host="cuda"), "tiny", h100) == (None, False)
    torch = SimpleNamespace(cuda=_Cuda())
    capped = card_cap.cap(torch, 0, card, None)
    assert capped.limit == H100_TOTAL - 500 * MiB and torch.cuda.fraction <= 1
    bigger = Card("79.13 GiB", round(79.13 * GiB))  # past the printed figure: a bigger card, still refused
    assert unmeasurable(scenario, gpu_budget(card="79.13 GiB", host="cuda"), "tiny", h100)[0] is not None
    with pytest.raises(card_cap.CardTooBig):
        card_cap.cap(torch, 0, bigger, None)


T4_HERE = round(14.56 * GiB)  # what a GCP T4 printed (docs/cards.md: Zheng-Chong/CatVTON#133), under the table's 14.75


@pytest.mark.parametrize("printed", ["Tesla T4", "NVIDIA T4"])
def test_a_card_named_as_this_runners_gpu_is_that_gpu_at_its_own_total(printed):
    """The table's T4 is one driver's figure: a T4 runner whose driver reports 14.56 GiB is the T4 a case names, at its
    own total, where before it was a bigger card than itself and the case was skipped on the card it names."""
    own = on_runner(by_name("T4"), printed, T4_HERE)
    assert own == Card("T4", T4_HERE, own=True)
    assert own.label == "T4 (this runner's, 14.56 GiB; the table's 14.75)"
    assert Card.from_env(own.to_env()) == own  # a command's processes cap at it and name it so too
    torch = SimpleNamespace(cuda=_Cuda())
    torch.cuda.get_device_properties = lambda device: SimpleNamespace(total_memory=T4_HERE)
    assert card_cap.cap(torch, 0, own, None).limit == T4_HERE - 500 * MiB  # the GPU less its context, as an equal GPU


def test_an_a10_runner_names_its_own_card_not_the_a10g():
    """An A10 printing Lambda's 21.99 GiB (docs/cards.md: zai-org/CogVLM#236) runs a card="A10" case as itself; it
    was refused as no card ("did you mean A10G ...?"), and card="A10G" on it stays another card's, holding more."""
    a10_here = round(21.99 * GiB)
    a10 = by_name("A10")
    assert a10 == by_name("NVIDIA A10") == Card("A10", round(22.06 * GiB))
    assert on_runner(a10, "NVIDIA A10", a10_here) == Card("A10", a10_here, own=True)
    assert on_runner(by_name("A10G"), "NVIDIA A10", a10_here).own is False


def test_a_gpu_whose_printed_name_two_memories_share_is_held_to_the_tables_figure():
    """torch prints "NVIDIA GeForce RTX 3060" for the 12 GB card and for one sold with less: the name is not the RTX
    3060 12GB's, so a runner printing it is never taken for that card at its own total (an 8 GB card would be)."""
    rtx3060 = by_name("RTX 3060 12GB")
    assert by_name("NVIDIA GeForce RTX 3060") is None
    assert on_runner(rtx3060, "NVIDIA GeForce RTX 3060", 8 * GiB - 200 * MiB) == rtx3060
    assert on_runner(by_name("V100 32GB"), "Tesla V100-SXM2-32GB", round(31.75 * GiB)).own is True


def test_the_card_stays_the_tables_on_another_gpu_or_where_the_figures_agree():
    t4 = by_name("T4")
    assert on_runner(t4, "NVIDIA A2", T4_HERE) == t4  # another card holding less: still a bigger card, skipped
    assert on_runner(t4, "Tesla T4", round(14.752 * GiB)) == t4  # prints the table's figure: the table's card
    assert on_runner(Card("14.75 GiB", round(14.75 * GiB)), "Tesla T4", T4_HERE).own is False  # a size is a size
    assert on_runner(t4, None, None) == t4


def test_a_card_case_runs_on_its_own_card_and_a_smaller_gpu_of_another_name_skips_it():
    scenario = Scenario(name="s", run="m:run")
    t4, a2 = (DeviceInfo(cuda=True, gpu_name=name, gpu_memory=T4_HERE, gpus=1) for name in ("Tesla T4", "NVIDIA A2"))
    mark = gpu_budget(card="T4", host="cuda", runner=(t4.gpu_name, t4.gpu_memory))
    assert mark.card.label == "T4 (this runner's, 14.56 GiB; the table's 14.75)" and mark.budget.vram == T4_HERE
    assert unmeasurable(scenario, mark, "tiny", t4) == (None, False)
    other = gpu_budget(card="T4", host="cuda", runner=(a2.gpu_name, a2.gpu_memory))
    assert other.card == by_name("T4")
    assert unmeasurable(scenario, other, "tiny", a2)[0].startswith(
        "card='T4' asks for T4 (14.75 GiB), more than this GPU's total memory 14.56 GiB (NVIDIA A2)")


@pytest.mark.parametrize("host", ["cpu", "cuda"])
@pytest.mark.parametrize("card", ["T4", {"real": "A100 80GB"}])
def test_a_card_on_a_test_pinned_to_the_cpu_is_refused(host, card):
    """Pinned to the CPU, the test's child never sees a GPU, so no host runs it as on its card: the card would change
    nothing anywhere, as vram= would not be checked anywhere (both are refused). card=None drops a farther one."""
    with pytest.raises(ValueError, match=r"^t\.py::test: card=.* with device='cpu': the test's child never sees a GPU"):
        gpu_budget(card=card, device="cpu", ram="1 GiB", host=host, where="t.py::test")
    assert gpu_budget(card=None, device="cpu", ram="1 GiB", host=host).card is None
    assert gpu_budget(card={"tiny": None}, device="cpu", ram="1 GiB", host=host).card is None
