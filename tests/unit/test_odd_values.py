"""A catalogue of odd values, field by field, for what a test body declares and calls: each is refused when it is
given, naming the field, the value and what is expected, instead of being coerced (str(1) -> "1") or accepted and
met later as something else. True is an int in Python, so a bool is probed where a number is expected."""

import math
import re
from pathlib import Path

import pytest

from gpu_budget import Control, Environment, Fix, FixError, Scenario


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


@pytest.mark.parametrize("line", [5, None, True, 1.5, math.inf, b"peft", Path("peft")], ids=repr)
def test_a_requirement_that_is_no_string_is_refused_naming_it(line):
    """requirements=[5] was the requirement "5" (a package named 5), b"peft" in a list its repr."""
    with pytest.raises(TypeError) as info:
        Environment(requirements=["peft<0.19", line])
    assert f"Environment(requirements=['peft<0.19', {line!r}]): {line!r} is no string: expected" in str(info.value)


@pytest.mark.parametrize("field", ["requirements", "files"])
def test_bytes_for_a_list_of_lines_or_files_is_refused(field):
    """requirements=b"peft" was read as its bytes, the requirement "112" (a package named 112) and three more."""
    with pytest.raises(TypeError, match=rf"Environment\({field}=b'peft'\): expected a list of strings"):
        Environment(**{field: b"peft"})


@pytest.mark.parametrize("file", [5, None, True, b"requirements.txt"], ids=repr)
def test_a_requirements_file_that_is_no_path_is_refused_naming_it(file):
    """files=[5] looked for a file named "5" and said it cannot be read, not that 5 is no path."""
    with pytest.raises(TypeError) as info:
        Environment(files=[file])
    assert f"Environment(files=[{file!r}]): {file!r} is no string or path: expected" in str(info.value)


def test_a_requirements_file_given_as_a_path_is_its_text(tmp_path):
    listed = tmp_path / "requirements.txt"
    listed.write_text("peft<0.19\n")
    assert Environment(files=[listed]).files == (str(listed),)


@pytest.mark.parametrize("name", [" alloc", "alloc ", "al\nloc", "alloc\t"], ids=repr)
def test_a_scenario_name_of_more_than_one_line_or_outer_spaces_is_refused(name):
    """A name names the case's row and baseline entry, as measure()'s label does, whose like is refused: "alloc " and
    "alloc" were two entries that read alike, and "al\\nloc" broke the table's row in two."""
    with pytest.raises(ValueError) as info:
        Scenario(name=name, run="runners:alloc")
    assert f"scenario name={name!r}: expected one line of text with no space at either end" in str(info.value)


def test_an_empty_cwd_is_refused():
    """cwd="" was read as no cwd at all: the command ran in the pytest process's working folder, unsaid."""
    with pytest.raises(ValueError, match=r"scenario 'c': cwd='': expected a folder's path"):
        command(cwd="")


@pytest.mark.parametrize("given", [5, None, b"lora", ["lora"]], ids=repr)
def test_without_fixes_given_no_name_is_refused_naming_it(given):
    """without_fixes(5) removed nothing and said nothing; without_fixes(Fix) removed nothing either."""
    with pytest.raises(FixError, match=rf"scenario 's': fix {re.escape(repr(given))} is not a fix's name"):
        Scenario(name="s", run="runners:alloc").without_fixes(given)


def test_without_fixes_given_a_fix_object_drops_that_fix():
    mine = fix(params={"batch_size": 1})
    applied = Scenario(name="s", run="runners:alloc", params={"batch_size": 4}).with_fixes(mine)
    assert applied.without_fixes(mine).fixes == ()


@pytest.mark.parametrize("cost", [["slower"], {}, None, 1, b"none"], ids=repr)
def test_a_cost_of_the_wrong_kind_is_named(cost):
    """cost=["slower"] was "TypeError: unhashable type: 'list'" from the fix library, naming neither field nor value."""
    with pytest.raises(FixError) as info:
        fix(cost=cost)
    assert f"fix 'mine': cost {cost!r} is not one of none, slower, accuracy-risk" in str(info.value)


@pytest.mark.parametrize(("params", "named"), [
    ({"cfg": {1: "a"}}, "params['cfg']={1: 'a'} is no JSON value (a mapping's key 1 is no string"),
    ({"cfg": [{"ok": {None: 2}}]}, "params['cfg']=[{'ok': {None: 2}}] is no JSON value (a mapping's key None is no"),
    ({"cfg": {True: 1}}, "params['cfg']={True: 1} is no JSON value (a mapping's key True is no string"),
], ids=repr)
def test_a_knob_holding_a_mapping_keyed_by_no_string_is_refused(params, named):
    """{"cfg": {1: "a"}} reached the runner as {"cfg": {"1": "a"}} (JSON writes every key as text): params["cfg"][1]
    was a KeyError in the measured child, and the baseline recorded a knob the test never wrote."""
    with pytest.raises(ValueError) as info:
        Scenario(name="s", run="runners:alloc", params=params)
    assert named in str(info.value)


def test_a_notes_table_keyed_by_numbers_is_kept_and_written_as_text():
    """A note's data is a table people read (S1's what-drives-RAM note keys its peaks by clip count, S5's by batch
    size): a number as a key is taken, and the report writes it as its text; a NaN in it is still refused."""
    import json

    from gpu_budget.session.session import note_row

    scenario = Scenario(name="s", run="runners:alloc")
    row = note_row("t.py::test", scenario, "tiny", "the boundary", {"peaks_mib": {24: 675.3, 25: 681.0}})
    assert json.loads(json.dumps(row.data)) == {"peaks_mib": {"24": 675.3, "25": 681.0}}
    with pytest.raises(pytest.fail.Exception, match=r"peaks_mib=\{24: nan\}"):
        note_row("t.py::test", scenario, "tiny", "the boundary", {"peaks_mib": {24: math.nan}})
