"""A catalogue of odd values, field by field, for what a test body declares and calls: each is refused when it is
given, naming the field, the value and what is expected, instead of being coerced (str(1) -> "1") or accepted and
met later as something else. True is an int in Python, so a bool is probed where a number is expected."""

import math

import pytest

from gpu_budget import Fix, Scenario


def command(**kw):
    return Scenario(name="c", command=["python", "train.py"], **kw)


def fix(**kw):
    return Fix("mine", "train", "halves it", **kw)


@pytest.mark.parametrize("name", [1, None, True, 1.5, math.nan, b"HOME", ("A",)], ids=repr)
@pytest.mark.parametrize("declare", [command, fix], ids=["Scenario", "Fix"])
def test_an_env_variable_name_that_is_no_string_is_refused_naming_it(declare, name):
    """env={1: 'x'} was set as the variable "1" (str(key)); b"HOME" as "b'HOME'"."""
    with pytest.raises(ValueError, match=r"env names a variable ") as info:
        declare(env={name: "x"})
    assert f"{name!r}: a variable's name is a string" in str(info.value)
