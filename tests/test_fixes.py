"""The fix library: declared fixes, validation at Scenario build (collection) time, requirement checks."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_budget import Fix, FixError, Scenario, fixes

RUNNER_FIXES = {  # runner module -> its own list of the fix names it honours
    "gpu_budget.scenarios.s2_paraformer": "FIXES",
    "gpu_budget.scenarios.s5_generic_oom": "FIXES",
    "gpu_budget.scenarios.s3_qwen2_audio": "EMBEDDING_MODES",
}


def scenario(**kw):
    return Scenario(name="toy", run="runners:alloc", **kw)


def test_every_builtin_fix_declares_stage_cost_and_write_up():
    assert len(fixes.BUILTIN) == 30
    for fix in map(fixes.get, fixes.BUILTIN):
        assert fix.stage in fixes.STAGES and fix.cost in fixes.COSTS and fix.doc
        assert fix.proposed_by and all(p in ("S1", "S2", "S3", "S4", "S5", "S1-workers") for p in fix.proposed_by), fix.name
        for other in (*fix.conflicts, *fix.requires, *fix.replaces):
            fixes.get(other)  # every named relation is a registered fix


@pytest.mark.parametrize("module, attr", sorted(RUNNER_FIXES.items()))
def test_runners_fix_names_are_registered(module, attr):
    names = getattr(importlib.import_module(module), attr)
    assert [fixes.get(name).name for name in names] == list(names)


def test_memtest_scenarios_declare_registered_fixes():
    memtests = str(Path(__file__).resolve().parent.parent / "memtests")
    sys.path.insert(0, memtests)
    try:
        offered = {m: importlib.import_module(m) for m in ("s1_scenarios", "s2_scenarios", "s3_scenarios",
                                                           "s4_scenarios", "s5_scenarios")}
    finally:
        sys.path.remove(memtests)
    assert [f.name for f in offered["s1_scenarios"].S1.supports] == list(offered["s1_scenarios"].FIXES)
    assert {f.name for f in offered["s2_scenarios"].S2.supports} == set(
        importlib.import_module("gpu_budget.scenarios.s2_paraformer").FIXES)


def test_unknown_fix_is_named_with_the_known_ones():
    with pytest.raises(FixError, match=r"unknown fix 'lroa' \(registered: .*lora.*\)"):
        scenario().with_fixes("lroa")
    with pytest.raises(FixError, match=r"scenario 'toy': unknown fix 'lora' \(this scenario supports: truncate\)"):
        scenario(supports=("truncate",)).with_fixes("lora")


def test_conflicting_pair_names_both_fixes():
    base = scenario(fixes=("modules_to_save",))
    with pytest.raises(FixError, match="fixes 'modules_to_save' and 'trainable_token_indices' conflict.*"
                                       "trainable_token_indices replaces modules_to_save"):
        base.with_fixes("trainable_token_indices")
    with pytest.raises(FixError, match="'load_in_8bit' and 'load_in_4bit' conflict"):
        scenario().with_fixes("lora", "load_in_8bit", "load_in_4bit")
    with pytest.raises(FixError, match="'no_wrap' and 'peft_before_wrap'|'peft_before_wrap' and 'no_wrap'"):
        Scenario(name="x", run="m:f", fixes=("peft_before_wrap", "no_wrap"))


def test_companion_fix_required_only_where_the_scenario_offers_it():
    with pytest.raises(FixError, match="fix 'load_in_8bit' needs fix 'lora' with it"):
        scenario().with_fixes("load_in_8bit")
    assert scenario().with_fixes("lora", "load_in_8bit").fixes == ("lora", "load_in_8bit")
    always_lora = scenario(supports=("load_in_8bit", "load_in_4bit"))  # LoRA built into the runner
    assert always_lora.with_fixes("load_in_4bit").fixes == ("load_in_4bit",)


def test_user_fix_registers_sets_params_and_validates():
    halve = Fix("test_fixes_halve", "train", "half the batch, twice the accumulation", cost="slower",
                params={"batch_size": 4, "accumulation": 2}, conflicts=("smaller_batch",))
    s = scenario(params={"batch_size": 8, "accumulation": 1}, scales={"tiny": {"batch_size": 16}},
                 supports=(halve, "smaller_batch"))
    assert fixes.get("test_fixes_halve") is not None
    fixed = s.with_fixes("test_fixes_halve")
    assert fixed.fixes == ("test_fixes_halve",) and fixed.params_for("tiny")["batch_size"] == 4
    assert fixed.to_json("tiny")["fixes"] == ["test_fixes_halve"]
    with pytest.raises(FixError, match="'test_fixes_halve' and 'smaller_batch' conflict"):
        fixed.with_fixes("smaller_batch")
    with pytest.raises(FixError, match="already registered with a different definition"):
        fixes.register(Fix("test_fixes_halve", "train", "something else"))
    fixes.register(halve)  # the same definition again is fine


@pytest.mark.parametrize("kwargs, message", [
    ({"stage": "compile"}, "stage 'compile' is not one of load, data, model, train, runtime"),
    ({"cost": "cheap"}, "cost 'cheap' is not one of none, slower, accuracy-risk"),
    ({"conflicts": ("bad_fix",)}, "names itself"),
    ({"name": "two words"}, "fix name 'two words'"),
])
def test_malformed_fix_is_rejected(kwargs, message):
    args = {"name": "bad_fix", "stage": "train", "doc": "d", **kwargs}
    with pytest.raises(FixError, match=message):
        Fix(**args)


def test_requirements_checked_without_importing(monkeypatch):
    gpu = Fix("test_fixes_gpu", "runtime", "d", needs=("cuda", "no_such_package_xyz", "json"))
    assert fixes.missing(gpu, cuda=False) == ["cuda", "no_such_package_xyz"]
    assert fixes.missing(gpu, cuda=True) == ["no_such_package_xyz"]


def test_importing_the_library_does_not_import_torch():
    code = "import sys, gpu_budget, gpu_budget.fixes; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


CONFLICTING = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8}, fixes=("modules_to_save",))
CASES = {f: S.with_fixes(*f.split("+")) for f in ["pad_to_multiple_of", "trainable_token_indices"]}

@pytest.mark.parametrize("fixes", list(CASES))
@pytest.mark.gpu_budget(ram="1 GiB")
def test_fix(gpu_budget, fixes):
    gpu_budget.measure(CASES[fixes])
'''


def test_conflicting_combination_fails_collection_naming_both(project):
    pytester = project(CONFLICTING)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error: nothing ran
    result.stdout.fnmatch_lines(["*ERROR collecting test_mem.py*",
                                 "*FixError*fixes 'modules_to_save' and 'trainable_token_indices' conflict*"])
    assert "passed" not in result.stdout.str()
