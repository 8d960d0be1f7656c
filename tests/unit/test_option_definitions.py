"""options.py: each option is defined once, as a field of Options; the flag, the ini value and the docs row come from it."""

import dataclasses

import pytest

from gpu_budget.session.options import OPTIONS, Options


def test_each_field_is_one_option_in_the_docs_order_with_its_default():
    fields = dataclasses.fields(Options)
    assert [f.metadata["option"] for f in fields] == list(OPTIONS)
    assert all(f.default == f.metadata["option"].default for f in fields)


def test_the_options_are_frozen_and_built_by_keyword(tmp_path):
    opts = Options(baselines=tmp_path, threads=2)
    assert (opts.baselines, opts.threads, opts.scale) == (tmp_path, 2, "tiny")
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.threads = 3
    with pytest.raises(TypeError):
        Options(True)  # keyword only: a field's place is the docs' order, not an API


def test_every_ini_value_is_registered_with_the_help_of_its_flag(pytester):
    """The ini value's help names its flag and its default, one rule for every option (pytest --help)."""
    shown = " ".join(pytester.runpytest_inprocess("--help", "-p", "no:randomly").stdout.str().split())
    for option in OPTIONS:
        default = "(true or false)" if option.is_switch else f"(default {option.shown_default})"
        assert f"{option.flag_name + ': ' if option.flag else ''}{' '.join(option.help.split())} {default}" in shown
