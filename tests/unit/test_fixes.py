"""The fix library: declared fixes, validation at Scenario build (collection) time, requirement checks."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_budget import Control, Fix, FixError, Scenario
from gpu_budget.declare import fixes

MEMTESTS = Path(__file__).resolve().parents[2] / "memtests"
CASE_STUDIES = sorted(p.name for p in MEMTESTS.iterdir() if (p / "scenarios.py").is_file())


def scenario(**kw):
    return Scenario(name="toy", run="runners:alloc", **kw)


def test_every_builtin_fix_declares_stage_cost_and_write_up():
    assert len(fixes.BUILTIN) == 17  # the generic ones; the case studies register their own
    for fix in map(fixes.get, fixes.BUILTIN):
        assert fix.stage in fixes.STAGES and fix.cost in fixes.COSTS and fix.doc
        assert fix.proposed_by and all(p in ("S1", "S2", "S3", "S4", "S5", fixes.ADDED_HERE) for p in fix.proposed_by), fix.name
        for other in (*fix.conflicts, *fix.requires, *fix.replaces):
            fixes.get(other)  # every named relation is a registered fix


def test_the_core_library_is_generic_and_each_case_study_registers_its_own():
    """Importing the plugin registers the generic fixes only; a case study's folder registers its own on import."""
    code = ("import gpu_budget.declare.fixes as f; print(sorted(x.name for x in f.registered()) == sorted(f.BUILTIN)); "
            "import sys; sys.path.insert(0, sys.argv[1]); import s4_wrap_order.scenarios; print(f.get('no_wrap').stage)")
    done = subprocess.run([sys.executable, "-c", code, str(MEMTESTS)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "model"]


@pytest.mark.parametrize("case", CASE_STUDIES)
def test_a_case_study_lists_its_fixes_once_in_its_scenarios(case):
    """Every Scenario of the folder supports registered fixes, without repeats; its own fixes are not the core's,
    and the runner keeps no list of names of its own (the Scenario's `supports` is the one list)."""
    sys.path.insert(0, str(MEMTESTS))
    try:
        module = importlib.import_module(f"{case}.scenarios")
        own = importlib.import_module(f"{case}.fixes")
    finally:
        sys.path.remove(str(MEMTESTS))
    scenarios = [v for v in vars(module).values() if isinstance(v, Scenario)]
    assert scenarios, case
    for scenario in scenarios:
        names = [f.name for f in scenario.supports]
        assert names and len(names) == len(set(names)), (scenario.name, names)
        assert all(fixes.get(name) in scenario.supports for name in names)
    mine = {v.name for v in vars(own).values() if isinstance(v, Fix)}
    assert mine and not mine & set(fixes.BUILTIN), (case, mine)
    runner = MEMTESTS / case / "runner.py"  # a case study of commands has none
    assert not runner.is_file() or "FIXES" not in runner.read_text()


def test_unknown_fix_is_named_with_the_known_ones():
    with pytest.raises(FixError, match=r"unknown fix 'lroa' \(registered: .*lora.*\)"):
        scenario().with_fixes("lroa")
    with pytest.raises(FixError, match=r"scenario 'toy': unknown fix 'lroa' \(this scenario supports: truncate\)"):
        scenario(supports=("truncate",)).with_fixes("lroa")


def test_a_registered_fix_the_scenario_does_not_support_is_not_called_unknown():
    """Before: "unknown fix 'lora' (this scenario supports: truncate)", for a name spelled right and registered."""
    with pytest.raises(FixError, match=r"scenario 'toy': fix 'lora' is not one this scenario supports \(it supports: "
                                       r"truncate\): add it to supports= if its runner honours it"):
        scenario(supports=("truncate",)).with_fixes("lora")



def test_one_fix_given_bare_is_one_fix_and_a_list_in_with_fixes_is_named():
    """fixes="lora" was read letter by letter ("unknown fix 'l'"), and with_fixes(["lora"]) raised TypeError:
    unhashable type: 'list'. A bare name (or Fix) is one fix, as a Fix's own tuple fields take one bare."""
    assert scenario(fixes="lora").fixes == ("lora",)
    assert [f.name for f in scenario(supports="truncate").supports] == ["truncate"]
    own = Fix("test_fixes_bare", "train", "one fix given bare")
    assert scenario(fixes=own, supports=own).fixes == ("test_fixes_bare",)
    with pytest.raises(FixError, match=r"scenario 'toy': fix \['lora'\] is not a fix's name: give names "
                                       r"\(with_fixes\('a', 'b'\), fixes=\('a', 'b'\)\) or gpu_budget.Fix objects"):
        scenario().with_fixes(["lora"])
    with pytest.raises(FixError, match=r"fix 3 is not a fix's name"):
        scenario(supports=("lora", 3))


def test_conflicting_pair_names_both_fixes():
    full = Fix("test_fixes_full_rows", "model", "train whole matrices", remedy=False)
    rows = Fix("test_fixes_new_rows", "model", "train the new rows", replaces=(full.name,))
    base = scenario(fixes=(full,), supports=(full, rows))
    with pytest.raises(FixError, match="fixes 'test_fixes_full_rows' and 'test_fixes_new_rows' conflict.*"
                                       "test_fixes_new_rows replaces test_fixes_full_rows"):
        base.with_fixes("test_fixes_new_rows")
    with pytest.raises(FixError, match="'load_in_8bit' and 'load_in_4bit' conflict"):
        scenario().with_fixes("lora", "load_in_8bit", "load_in_4bit")
    wrap = Fix("test_fixes_no_wrap", "model", "no wrapper", conflicts=("gradient_checkpointing",))
    with pytest.raises(FixError, match="'gradient_checkpointing' and 'test_fixes_no_wrap' conflict.*"
                                       "test_fixes_no_wrap declares the conflict"):
        Scenario(name="x", run="m:f", fixes=("gradient_checkpointing", wrap))



def test_two_fixes_setting_one_param_to_two_values_conflict_naming_both():
    """Before: "fix 'test_fixes_bs4' sets batch_size=4, but its params hold 2 at scale 'tiny': apply it with
    .with_fixes('test_fixes_bs4')", for a scenario built with exactly that; whichever fix came last had won."""
    bs4 = Fix("test_fixes_bs4", "train", "batch 4", params={"batch_size": 4})
    bs2 = Fix("test_fixes_bs2", "train", "batch 2", params={"batch_size": 2})
    same = Fix("test_fixes_also_bs4", "train", "batch 4 too", params={"batch_size": 4})
    s = scenario(params={"batch_size": 8}, supports=(bs4, bs2, same))
    for ordered in (("test_fixes_bs4", "test_fixes_bs2"), ("test_fixes_bs2", "test_fixes_bs4")):
        with pytest.raises(FixError, match=r"scenario 'toy': fixes '.*' and '.*' conflict: they cannot be applied "
                                           r"together \(both set batch_size: (4 and 2|2 and 4)\)"):
            s.with_fixes(*ordered)
    assert s.with_fixes("test_fixes_bs4", "test_fixes_also_bs4").params_for("tiny")["batch_size"] == 4  # one value


def test_companion_fix_required_only_where_the_scenario_offers_it():
    with pytest.raises(FixError, match="fix 'load_in_8bit' needs fix 'lora' with it"):
        scenario().with_fixes("load_in_8bit")
    assert scenario().with_fixes("lora", "load_in_8bit").fixes == ("lora", "load_in_8bit")
    always_lora = scenario(supports=("load_in_8bit", "load_in_4bit"))  # LoRA built into the runner
    assert always_lora.with_fixes("load_in_4bit").fixes == ("load_in_4bit",)


def test_a_companion_no_fix_is_named_is_refused_naming_it(monkeypatch):
    """requires=("lroa",) was accepted and never required: applying the fix alone passed, and the remediation search
    answered it without its companion."""
    monkeypatch.setattr(fixes, "_REGISTRY", dict(fixes._REGISTRY))  # registered for this test alone
    quant = fixes.register(Fix("test_fixes_quant", "model", "quantise, with its adapters", requires=("lroa",)))
    with pytest.raises(FixError, match=r"scenario 'toy': fix 'test_fixes_quant' requires 'lroa', which is no registered"):
        scenario(supports=(quant, "lora"))  # named when the Scenario is built: at collection
    with pytest.raises(FixError, match=r"fix 'test_fixes_quant' requires 'lroa', which is no registered fix"):
        scenario().with_fixes("test_fixes_quant")  # no supports=: any registered fix, named when it is applied


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
    ({"control": Control("other", "a alone", "a", "the rest")}, "needs a gpu_budget.fixes.Control and remedy=False"),
    ({"control": ("other", "a", "a", "b"), "remedy": False}, "needs a gpu_budget.fixes.Control"),
    ({"args": ["--batch_size", 4]}, r"fix 'bad_fix': args=\('--batch_size', 4\): expected strings, one per argument"),
    # each was a bare "'int' object is not iterable" (or, for a name, "'int' object has no attribute 'replace'")
    ({"needs": 5}, r"fix 'bad_fix': needs=5: expected strings \(needs=\('cuda', 'bitsandbytes'\)\)"),
    ({"conflicts": 5}, r"fix 'bad_fix': conflicts=5: expected strings"),
    ({"needs": ["cuda", 3]}, r"fix 'bad_fix': needs=\('cuda', 3\): expected strings"),  # find_spec(3) broke later
    ({"args": 5}, r"fix 'bad_fix': args=5: expected strings, one per argument"),
    ({"params": 5}, r"fix 'bad_fix': params=5: expected a mapping of knob name to value"),
    ({"params": {"ids": {1}}}, r"fix 'bad_fix': params\['ids'\]=\{1\} is no JSON value"),
    ({"name": 5}, r"fix name 5: use letters"),
    # a padded name: needs=(" peft",) was never importable, so the fix was skipped as lacking ' peft', never tried
    ({"needs": (" peft",)}, r"fix 'bad_fix': needs=\(' peft',\): ' peft' has spaces at its ends, .*; write 'peft'"),
    ({"conflicts": "lora "}, r"fix 'bad_fix': conflicts='lora ': 'lora ' has spaces at its ends"),
    ({"requires": ("lora", "\ttruncate")}, r"requires=\('lora', '\\ttruncate'\): '\\ttruncate' has spaces at its ends"),
    ({"replaces": ("x ",)}, r"replaces=\('x ',\): 'x ' has spaces"),
    ({"proposed_by": (" S1",)}, r"proposed_by=\(' S1',\): ' S1' has spaces"),
    # a version, a distribution's name or 'CUDA' was never importable, so the fix was never tried, reported as
    # "needs torch>=2" on a host that has torch
    ({"needs": ("torch>=2",)}, (r"fix 'bad_fix': needs=\('torch>=2',\): 'torch>=2' is no module name: needs holds "
                                r"'cuda' or what an import statement names \('bitsandbytes', 'sklearn' for "
                                r"scikit-learn\), checked without importing it, with no version$")),
    ({"needs": ("scikit-learn",)}, r"'scikit-learn' is no module name"),
    ({"needs": ("CUDA",)}, r"'CUDA' is no module name: .*; write 'cuda' for a CUDA GPU$"),
    ({"needs": ("torch..nn",)}, r"'torch\.\.nn' is no module name"),
])
def test_malformed_fix_is_rejected(kwargs, message):
    args = {"name": "bad_fix", "stage": "train", "doc": "d", **kwargs}
    with pytest.raises(FixError, match=message):
        Fix(**args)


def test_requirements_checked_without_importing(monkeypatch, tmp_path):
    (tmp_path / "trap_pkg_xyz.py").write_text("raise RuntimeError('imported')\n")  # importing it would fail
    monkeypatch.syspath_prepend(str(tmp_path))
    gpu = Fix("test_fixes_gpu", "runtime", "d", needs=("cuda", "no_such_package_xyz", "trap_pkg_xyz"))
    assert fixes.missing(gpu, cuda=False) == ["cuda", "no_such_package_xyz"]
    assert fixes.missing(gpu, cuda=True) == ["no_such_package_xyz"]
    assert "trap_pkg_xyz" not in sys.modules  # found, never imported


def test_a_dotted_requirement_is_checked_without_importing_its_package(monkeypatch, tmp_path):
    package = tmp_path / "trap_pkg_dotted"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('imported')\n")  # importing it would fail
    (package / "sub.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    fix = Fix("test_fixes_dotted", "runtime", "d",
              needs=("no_such_package_xyz.sub", "trap_pkg_dotted.sub", "trap_pkg_dotted.absent"))
    assert fixes.missing(fix, cuda=False) == ["no_such_package_xyz.sub", "trap_pkg_dotted.absent"]
    assert "trap_pkg_dotted" not in sys.modules  # found, never imported


def test_importing_the_library_does_not_import_torch():
    code = "import sys, gpu_budget, gpu_budget.declare.fixes; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


CONFLICTING = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8}, fixes=("lora", "load_in_8bit"))
CASES = {f: S.with_fixes(*f.split("+")) for f in ["gradient_checkpointing", "load_in_4bit"]}

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
                                 "*FixError*fixes 'load_in_8bit' and 'load_in_4bit' conflict*"])
    assert "passed" not in result.stdout.str()


def test_a_scenario_that_fails_to_build_leaves_none_of_its_fixes_registered():
    """Its Fix objects were registered on the way, then its companion check failed: the fix stayed in every
    "registered:" list, and its corrected definition (in a notebook, the cell run again) was refused as a second
    meaning of the name."""
    typo = Fix("test_fixes_half_built", "train", "needs a companion", requires=("lroa",))
    with pytest.raises(FixError, match="requires 'lroa', which is no registered fix"):
        scenario(supports=(typo,))
    assert "test_fixes_half_built" not in {f.name for f in fixes.registered()}
    corrected = Fix("test_fixes_half_built", "train", "needs a companion", requires=("lora",))
    assert scenario(supports=(corrected, "lora")).supports[0] is corrected
    with pytest.raises(FixError):
        scenario(supports=("lora",)).with_fixes(Fix("test_fixes_half_applied", "train", "d", requires=("lroa",)))
    assert "test_fixes_half_applied" not in {f.name for f in fixes.registered()}
