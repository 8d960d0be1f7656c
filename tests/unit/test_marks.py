"""The marker's per-device expectations: what applies where the case's child runs, and clear errors for bad input."""

import pytest

from gpu_budget.declare.marks import expectation_problem, gpu_budget
from gpu_budget.units import parse_size

GiB = 2**30
S1_LIKE = {"ram": {"tiny": "690 MiB", "real": "12.7 GiB"}, "expect": "over-budget",
           "cuda": {"ram": {"real": "12.7 GiB"}, "expect": None}}


def test_top_level_keys_apply_on_every_device_unless_a_device_block_names_them():
    cpu = gpu_budget(**S1_LIKE, scale="tiny", host="cpu")
    assert (cpu.budget.ram, cpu.expect, cpu.device, cpu.pinned) == (690 * 2**20, "over-budget", "cpu", False)
    cuda_tiny = gpu_budget(**S1_LIKE, scale="tiny", host="cuda")
    assert (cuda_tiny.budget.ram, cuda_tiny.budget.vram, cuda_tiny.expect, cuda_tiny.device) == (None, None, None, "cuda")
    cuda_real = gpu_budget(**S1_LIKE, scale="real", host="cuda")
    assert (cuda_real.budget.ram, cuda_real.expect) == (parse_size("12.7 GiB"), None)
    assert gpu_budget(ram="1 GiB", tolerance={"rel": 0.1}, cuda={"tolerance": {"rel": 0.2}}, host="cuda").tolerance.rel == 0.2


def test_expect_per_scale_and_the_device_a_test_pins():
    mark = {"cpu": {"ram": {"tiny": "2 GiB"}, "expect": "over-budget"},
            "cuda": {"vram": {"real": "24 GB"}, "expect": {"real": "over-budget"}}}
    assert gpu_budget(**mark, scale="real", host="cuda").expect == "over-budget"
    assert gpu_budget(**mark, scale="real", host="cuda").budget.vram == 24 * 10**9
    assert gpu_budget(**mark, scale="tiny", host="cuda").expect is None
    pinned = gpu_budget(**mark, device="cpu", scale="tiny", host="cuda")  # the cpu block, whatever the host has
    assert (pinned.device, pinned.pinned, pinned.budget.ram, pinned.expect) == ("cpu", True, 2 * GiB, "over-budget")


def test_an_expectation_needs_a_budget_where_it_is_judged():
    mark = gpu_budget(cpu={"ram": "1 GiB"}, expect="over-budget", host="cuda")
    assert "expect='over-budget' on cuda at scale 'tiny', but no ram or vram budget applies there" in \
        expectation_problem(mark, "tiny")
    assert expectation_problem(gpu_budget(cpu={"ram": "1 GiB"}, expect="over-budget", host="cpu"), "tiny") is None
    assert expectation_problem(gpu_budget(host="cuda"), "tiny") is None  # no expectation: measured and baselined


@pytest.mark.parametrize("kwargs, message", [
    ({"device": "tpu"}, "device='tpu' is not one of ('cpu', 'cuda')"),
    ({"cuda": {"vram": "1 GiB", "budget": 1}}, "cuda= must be a mapping of ram, vram, expect, tolerance, origin; got ['budget']"),
    ({"cpu": "1 GiB"}, "cpu= must be a mapping of ram, vram, expect, tolerance, origin; got '1 GiB'"),
    ({"expect": {"huge": "over-budget"}}, "expect names unknown scale(s) ['huge']"),
    ({"cuda": {"expect": "oom"}}, "expect='oom' is not one of ('over-budget',)"),
    ({"cuda": {"vram": "lots"}}, "bad vram budget"),
])
def test_bad_declarations_name_the_test_and_the_value(kwargs, message):
    with pytest.raises(ValueError, match="^test_x.py::t: ") as info:
        gpu_budget(**kwargs, host="cuda", where="test_x.py::t")
    assert message in str(info.value)


def test_origin_per_scale_and_device_and_none_where_no_budget_applies():
    declared = {"ram": {"tiny": "690 MiB", "real": "12.7 GB"}, "origin": {"tiny": "measured-gap", "real": "write-up"},
                "cuda": {"ram": {"real": "12.7 GB"}}}
    assert gpu_budget(**declared, scale="tiny").origin == "measured-gap"
    assert gpu_budget(**declared, scale="real", host="cuda").origin == "write-up"
    assert gpu_budget(**declared, scale="tiny", host="cuda").origin is None  # no budget there: nothing to come from
    assert gpu_budget(ram="1 GiB", origin="chosen").origin == "chosen"


@pytest.mark.parametrize("origin, message", [("measured", r"origin='measured' is not one of \('write-up'"),
                                             ({"real": "wirte-up"}, r"origin='wirte-up' is not one of"),
                                             ({"huge": "card"}, r"origin names unknown scale\(s\) \['huge'\]"),
                                             (["write-up"], r"origin=\['write-up'\] is not one of \('write-up'"),
                                             ({"tiny": {"x"}}, r"origin=\{'x'\} is not one of")])
def test_a_bad_origin_is_named_on_any_scale(origin, message):
    with pytest.raises(ValueError, match=message):
        gpu_budget(ram="1 GiB", origin=origin, scale="tiny", where="m.py::t")


def test_the_bare_number_hint_for_an_exponent_is_a_size_that_reads():
    """Before: ram=1e16 was told to write "1e+16 B", which parse_size refuses in turn."""
    with pytest.raises(ValueError, match='e.g. "10000000000000000 B"') as refused:
        gpu_budget(ram=1e16, where="t")
    hint = str(refused.value).split('e.g. "')[1].split('"')[0]
    assert parse_size(hint) == 10**16

