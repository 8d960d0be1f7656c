"""A catalogue of odd values, field by field, for what a test body declares and calls: each is refused when it is
given, naming the field, the value and what is expected, instead of being coerced (str(1) -> "1") or accepted and
met later as something else. True is an int in Python, so a bool is probed where a number is expected."""

import math

import pytest

from gpu_budget import Control, Fix, FixError, Scenario


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


@pytest.mark.parametrize("doc", [5, None, True, b"halves it", ["halves it"], "", "   "], ids=repr)
def test_a_fix_doc_that_is_no_text_is_refused_naming_it(doc):
    """Fix(doc=5) was accepted, and its doc written where the report and FINDINGS.md say what the fix does."""
    with pytest.raises(FixError, match=r"fix 'mine': doc=") as info:
        Fix("mine", "train", doc)
    assert f"doc={doc!r}: expected" in str(info.value)


@pytest.mark.parametrize("remedy", [None, 0, 1, "no", "False", 1.5, math.nan, [False]], ids=repr)
def test_a_remedy_that_is_no_bool_is_refused_naming_it(remedy):
    """remedy="False" read as true (a remedy the search tries); remedy=None as false."""
    with pytest.raises(FixError, match=r"fix 'mine': remedy=") as info:
        fix(remedy=remedy)
    assert f"remedy={remedy!r}: expected True" in str(info.value)


@pytest.mark.parametrize("field", ["of", "alone", "short", "rest"])
@pytest.mark.parametrize("value", [None, 5, True, b"x", "", "  ", ["x"]], ids=repr)
def test_a_control_field_that_is_no_text_is_refused_naming_it(field, value):
    """A Control's fields are written into FINDINGS.md's split of a fix's saving: None was written "None"."""
    given = {"of": "quantize", "alone": "freezing alone", "short": "freezing", "rest": "8-bit storage on top",
             field: value}
    with pytest.raises(FixError) as info:
        Control(**given)
    assert f"Control {field}={value!r}: expected" in str(info.value)


@pytest.mark.parametrize("label", ["needs", "conflicts", "requires", "replaces", "proposed_by"])
@pytest.mark.parametrize("value", ["", "  ", ("lora", "")], ids=repr)
def test_an_empty_name_in_a_fix_s_names_is_refused(label, value):
    """needs="" was the requirement "", conflicts=("lora", "") a rival no fix can be named."""
    with pytest.raises(FixError) as info:
        fix(**{label: value})
    assert f"fix 'mine': {label}={value!r}: expected" in str(info.value)
