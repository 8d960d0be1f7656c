"""A marker's mistakes are errors naming the test and the fix: a budget with no unit (parse_size would read ram=4 as
4 bytes) and a keyword the marker does not take (declare/marks.py)."""

import pytest

from gpu_budget.declare.marks import KEYWORDS, gpu_budget, merge
from gpu_budget.units import parse_size

WHERE = "test_x.py::test_y"


@pytest.mark.parametrize("kwargs, named", [
    ({"ram": 4}, 'ram budget 4 is a bare number: give it a unit, e.g. "4 GiB"'),
    ({"vram": "4"}, "vram budget '4' is a bare number"),
    ({"ram": 0.5}, 'ram budget 0.5 is a bare number: give it a unit, e.g. "0.5 GiB"'),
    ({"ram": {"tiny": "900 MiB", "real": 12}}, "ram budget 12 at scale 'real' is a bare number"),
    ({"cpu": {"ram": 2 << 30}}, ("cpu['ram'] budget 2147483648 is a bare number: give it a unit, e.g. "
                                 '"2147483648 B" (2.00 GiB) if bytes are meant')),
    ({"cuda": {"vram": {"real": 24}}}, "cuda['vram'] budget 24 at scale 'real' is a bare number"),  # not this host's
])
def test_a_bare_number_budget_is_an_error_asking_for_a_unit(kwargs, named):
    with pytest.raises(ValueError) as info:
        gpu_budget(**kwargs, scale="tiny", host="cpu", where=WHERE)
    assert str(info.value).startswith(f"{WHERE}: ") and named in str(info.value)


def test_a_positional_bare_number_is_refused_too():
    with pytest.raises(ValueError, match="ram budget 4 is a bare number"):
        gpu_budget(**merge([((4,), {})], where=WHERE), where=WHERE)


@pytest.mark.parametrize("budget, expected", [("4 GiB", 4 * 2**30), ("4096 B", 4096), ("24GB", 24 * 10**9),
                                              ({"tiny": "2 MiB"}, 2 * 2**20), (None, None)])
def test_a_size_with_its_unit_is_read_as_before(budget, expected):
    assert gpu_budget(ram=budget, where=WHERE).budget.ram == expected


def test_what_else_reads_bare_bytes_still_does():
    """parse_size keeps taking bytes as an int: a tolerance's abs and the baseline files' figures are byte counts."""
    assert parse_size(4096) == 4096
    assert gpu_budget(ram="1 GiB", tolerance={"rel": 0.01, "abs": 4096}, where=WHERE).tolerance.abs == 4096


def test_an_unknown_keyword_names_the_test_a_guess_and_the_keywords():
    with pytest.raises(ValueError) as info:
        merge([((), {"ram": "1 GiB"}), ((), {"rams": "4 GiB"})], where=WHERE)
    message = str(info.value)
    assert message.startswith(f"{WHERE}: gpu_budget marker has an unknown keyword 'rams' (did you mean 'ram'?); ")
    assert message.endswith("its keywords are " + ", ".join(KEYWORDS))
    with pytest.raises(ValueError, match=r"unknown keyword 'budget'; its keywords are ram, vram, "):
        merge([((), {"budget": "4 GiB"})], where=WHERE)


@pytest.mark.parametrize("internal", ["scale", "host", "where"])
def test_the_sessions_own_arguments_are_not_marker_keywords(internal):
    with pytest.raises(ValueError, match=f"unknown keyword {internal!r}"):
        merge([((), {internal: "x"})], where=WHERE)
