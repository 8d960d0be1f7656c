"""Sizes: the documented forms parse, bad strings are rejected by name."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpu_budget.units import SizeError, format_mib, format_size, parse_size


@pytest.mark.parametrize(
    "text, expected",
    [
        ("12.7 GiB", round(12.7 * 2**30)),
        ("24GB", 24 * 10**9),
        ("512 MiB", 512 * 2**20),
        ("512mib", 512 * 2**20),
        ("1048576", 1048576),
        (1048576, 1048576),
        ("1.5 KB", 1500),
        ("0", 0),
        ("2.0 B", 2),
        ("0.5 KiB", 512),
    ],
)
def test_documented_forms(text, expected):
    assert parse_size(text) == expected


def test_gb_is_decimal_and_gib_binary():
    assert parse_size("1 GB") == 10**9
    assert parse_size("1 GiB") == 2**30


@pytest.mark.parametrize("bad", ["", "GiB", "-1 GB", "12.7 Gibs", "1e9", "nan GB", "inf", "12,7 GiB", "1 Gb/s", "½ GiB",
                                 "1" * 400 + " GiB"])
def test_bad_strings_name_the_string(bad):
    with pytest.raises(SizeError) as info:
        parse_size(bad)
    assert repr(bad) in str(info.value)


@pytest.mark.parametrize("bad", ["0.5 B", "1.5", "7.25b", "1" * 400 + ".5 B"])
def test_a_fraction_of_a_byte_is_refused(bad):
    """'0.5 B' would round to a budget of 0 bytes: a fraction of a byte is a typo, not a size."""
    with pytest.raises(SizeError, match="not a whole number of bytes") as info:
        parse_size(bad)
    assert repr(bad) in str(info.value)


@pytest.mark.parametrize("bad", [True, None, 1.5, -3, [1]])
def test_non_sizes_rejected(bad):
    with pytest.raises(SizeError):
        parse_size(bad)


@given(st.text())
def test_any_text_parses_or_is_rejected_by_name(text):
    try:
        value = parse_size(text)
    except SizeError as exc:
        assert repr(text) in str(exc)
    else:
        assert isinstance(value, int) and value >= 0


@given(st.text(alphabet="0123456789. ", max_size=8), st.sampled_from(["kb", "mb", "gb", "tb", "kib", "mib", "gib", "tib", "b", ""]))
def test_number_and_unit_in_any_case(number, unit):
    text = number + unit.upper()
    try:
        assert parse_size(text) == parse_size(number + unit)
    except SizeError as exc:
        assert repr(text) in str(exc) or repr(number + unit) in str(exc)


@given(st.integers(min_value=0, max_value=2**50))
def test_format_round_trips_within_rounding(nbytes):
    value, unit = format_size(nbytes).split()
    assert abs(parse_size(f"{value} {unit}") - nbytes) <= max(1, nbytes * 0.005)


def test_format_none_is_a_dash():
    assert format_size(None) == "-"


def test_format_mib_keeps_a_tenth_of_a_mib_at_any_size():
    assert format_mib(300 * 2**20 + 2**20 // 10 + 1) == "300.1 MiB"
    assert format_mib(3 * 2**30) == "3,072.0 MiB"  # a boundary a few MiB from a GiB budget stays visible
    assert format_mib(None) == "-"
