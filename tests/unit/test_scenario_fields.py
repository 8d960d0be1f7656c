"""A Scenario's fields are checked when it is built, each bad one named: a value found wrong only later crashes the
session (a param that is no JSON broke the baseline write with an INTERNALERROR) or reads as something else."""

import pytest

from gpu_budget import Scenario


@pytest.mark.parametrize("kwargs, named", [
    ({"params": {"mib": 8, "ids": {1, 2}}}, "scenario 's': params['ids']={1, 2} is no JSON value"),
    ({"params": {"mib": 8}, "scales": {"tiny": {"shape": (1, {2})}}}, "scales['tiny']['shape']=(1, {2}) is no JSON"),
    ({"params": {"cfg": {"a": 1, 2: "b"}}}, "params['cfg']={'a': 1, 2: 'b'} is no JSON value"),  # keys json cannot sort
    ({"params": {3: "x"}}, "scenario 's': params names a knob 3: a knob's name is a string"),
    # a padded name is another knob: " needs_cuda" ran the case unskipped on a host without CUDA
    ({"params": {" needs_cuda": True}}, ("scenario 's': params names a knob ' needs_cuda': spaces at its ends make it "
                                         "another knob than 'needs_cuda'")),
    ({"params": {"mib": 8}, "scales": {"tiny": {"mib ": 4}}}, "scales['tiny'] names a knob 'mib ': spaces at its ends"),
    # JSON has no such number: the baseline file was written with Infinity / NaN, which no strict reader reads
    ({"params": {"max_seconds": float("inf")}}, "scenario 's': params['max_seconds']=inf is no JSON value"),
    ({"params": {"mib": 8}, "scales": {"tiny": {"lrs": [1e-4, float("nan")]}}}, "scales['tiny']['lrs']=[0.0001, nan]"),
])
def test_a_param_that_is_no_json_is_refused_naming_it(kwargs, named):
    with pytest.raises(ValueError) as info:
        Scenario(name="s", run="runners:alloc", **kwargs)
    assert named in str(info.value)


def test_json_params_of_every_kind_are_kept_as_given():
    params = {"n": 1, "lr": 2e-5, "on": True, "none": None, "name": "x", "shape": (1, 2), "cfg": {"a": [1, {"b": 2}]}}
    assert Scenario(name="s", run="runners:alloc", params=params).params == params


def test_a_param_set_later_is_checked_too():
    with pytest.raises(ValueError, match=r"params\['ids'\]=\{1\} is no JSON value"):
        Scenario(name="s", run="runners:alloc").with_params(ids={1})


@pytest.mark.parametrize("kwargs, named", [
    ({"scales": ["tiny"]}, "scenario 's': scales=['tiny']: expected a mapping of scale to the params laid over params="),
    ({"scales": {"tiny": None}}, "scenario 's': scales['tiny']=None: expected a mapping of knob name to value"),
    ({"params": "batch_size=1"}, "scenario 's': params='batch_size=1': expected a mapping of knob name to value"),
])
def test_params_or_scales_that_are_no_mapping_are_refused_naming_them(kwargs, named):
    with pytest.raises(ValueError) as info:
        Scenario(name="s", run="runners:alloc", **kwargs)
    assert named in str(info.value)


def test_a_scale_the_gate_never_runs_is_refused_naming_it():
    """A typo in a scale's name skipped the case at that scale in every session ("has no 'real' scale")."""
    with pytest.raises(ValueError, match=r"scenario 's': scales names unknown scale\(s\) \['reel'\] \(known: tiny, "
                                         r"real, the values of --gpu-budget-scale\)"):
        Scenario(name="s", run="runners:alloc", scales={"tiny": {}, "reel": {"hidden": 768}})


def test_a_scenario_of_one_scale_is_still_one():
    assert Scenario(name="s", run="runners:alloc", scales={"real": {"hidden": 768}}).scales == {"real": {"hidden": 768}}


@pytest.mark.parametrize("name", [3, None, "", "  "])
def test_a_name_that_is_no_text_is_refused_naming_it(name):
    """A name that is no string passed the test and failed the gate at the baseline write ("'scenario' must be a
    string. Fix it by hand or delete it"), blaming a file the gate itself wrote."""
    with pytest.raises(ValueError, match=rf"scenario name={name!r}: expected a non-empty string"):
        Scenario(name=name, run="runners:alloc")


def test_prepared_from_given_one_bare_name_is_that_name_not_its_letters():
    """prepared_from=("hidden") is a string: read as its letters, prepare was handed no knob and its error said the
    name was not in prepared_from "(empty)"."""
    s = Scenario(name="s", run="runners:alloc", prepare="runners:alloc", params={"hidden": 64, "batch": 2},
                 prepared_from=("hidden"))
    assert s.prepared_from == ("hidden",)
    assert s.prepare_params("tiny") == {"hidden": 64}


def test_prepared_from_naming_no_string_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"scenario 's': prepared_from names 3: a knob's name is a string"):
        Scenario(name="s", run="runners:alloc", prepared_from=("hidden", 3))


@pytest.mark.parametrize("where", ["params", "scales"])
def test_a_needs_cuda_that_is_no_bool_is_refused_naming_it(where):
    """needs_cuda="false" read as true: the case was skipped as CUDA-only on every host without a GPU."""
    given = {"needs_cuda": "false"}
    kwargs = {"params": given} if where == "params" else {"scales": {"tiny": given}}
    with pytest.raises(ValueError, match=r"\['needs_cuda'\]='false': expected True or False"):
        Scenario(name="s", run="runners:alloc", **kwargs)


def test_needs_cuda_in_params_holds_at_every_scale_a_scale_may_lift_it():
    """In params= it was dropped unread: the case ran on the CPU though it declared it needs CUDA."""
    s = Scenario(name="s", run="runners:alloc", params={"needs_cuda": True}, scales={"tiny": {}, "real": {"needs_cuda": False}})
    assert s.needs_cuda("tiny") and not s.needs_cuda("real")
    assert "needs_cuda" not in s.params_for("tiny")  # never a knob: the runner is not handed it


def test_none_for_fixes_supports_or_prepared_from_is_none_given():
    """Each was a bare TypeError ("'NoneType' object is not iterable") failing the module's collection."""
    s = Scenario(name="s", run="runners:alloc", params={"hidden": 64}, fixes=None, supports=None, prepared_from=None)
    assert (s.fixes, s.supports, s.prepared_from) == ((), (), ())
    assert s.prepare_params("tiny") == {"hidden": 64}


CMD = {"command": ["python", "train.py"]}


@pytest.mark.parametrize("kwargs, named", [
    ({"fixes": 5}, "scenario 's': fixes=5: expected fix names or gpu_budget.Fix objects"),
    ({"supports": 5}, "scenario 's': supports=5: expected fix names or gpu_budget.Fix objects"),
    ({"fixes": b"lora"}, "scenario 's': fixes=b'lora': expected fix names"),  # its bytes would read as fixes 108, ...
    ({"prepared_from": 5}, "scenario 's': prepared_from=5: expected names of knobs"),
    ({"run": 5}, "scenario 's': run=5 must be a module-level function"),
    ({"run": "train"}, "scenario 's': run='train': expected 'module:function'"),
    ({"run": "runners:alloc", "prepare": "runners:"}, "scenario 's': prepare='runners:': expected 'module:function'"),
    ({"run": " runners:alloc"}, "scenario 's': run=' runners:alloc': expected 'module:function'"),  # padded: the
    ({"run": "runners:alloc "}, "scenario 's': run='runners:alloc ': expected 'module:function'"),  # child alone said
    ({**CMD, "cwd": 5}, "scenario 's': cwd=5: expected a folder's path"),
    ({**CMD, "cwd": ["work"]}, "scenario 's': cwd=['work']: expected a folder's path"),  # it ran in a folder "['work']"
])
def test_a_field_of_the_wrong_kind_is_refused_naming_it(kwargs, named):
    """Each was a bare "'int' object is not iterable" naming no field, a message naming no field ("5 must be a
    module-level function"), a reference the measured child alone refused, or a cwd= taken as its str()."""
    given = kwargs if "command" in kwargs or "run" in kwargs else {"run": "runners:alloc", **kwargs}
    with pytest.raises(ValueError) as info:
        Scenario(name="s", **given)
    assert named in str(info.value)


def test_a_path_for_cwd_is_its_text():
    from pathlib import Path
    assert Scenario(name="s", **CMD, cwd=Path("work")).cwd == "work"
