"""Scenario assets: keyed by the params prepare reads, so run-only knobs share one prepared model."""

import functools
import re

import pytest

from gpu_budget import Scenario
from gpu_budget.declare.scenario import PrepareParams


def scenario(**params):
    return Scenario(name="s", prepare="m:prepare", run="m:run", params={"hidden": 8, "batch_size": 1, **params},
                    prepared_from=("hidden", "clips"))


def test_run_only_params_and_fixes_share_assets_prepared_params_do_not():
    base = scenario()
    assert base.asset_key("tiny") == scenario(batch_size=32).asset_key("tiny") == base.with_params(lr=1.0).asset_key("tiny")
    assert base.asset_key("tiny") != scenario(hidden=16).asset_key("tiny")
    assert base.prepare_params("tiny") == {"hidden": 8}  # "clips" is declared but unset: optional
    undeclared = Scenario(name="s", prepare="m:prepare", run="m:run", params={"hidden": 8, "batch_size": 1})
    assert undeclared.asset_key("tiny") != Scenario(name="s", prepare="m:prepare", run="m:run",
                                                    params={"hidden": 8, "batch_size": 2}).asset_key("tiny")
    assert base.to_json("tiny")["prepare_params"] == {"hidden": 8}
    assert base.to_json("tiny")["params"] == {"hidden": 8, "batch_size": 1}


def test_prepare_reading_an_undeclared_param_is_an_error_naming_it():
    params = PrepareParams({"hidden": 8}, {"hidden": 8, "batch_size": 4}, "s3")
    assert params["hidden"] == 8 and params.get("hidden") == 8 and params.get("dtype", "float32") == "float32"
    for read in (lambda: params["batch_size"], lambda: params.get("batch_size", 1)):
        with pytest.raises(KeyError, match="scenario 's3': prepare read param 'batch_size', which is not in its "
                                           r"prepared_from \(hidden\)"):
            read()
    with pytest.raises(KeyError, match="^'dtype'$"):
        params["dtype"]  # not a param at all: the usual KeyError


PREPS = '''
def reads_hidden(ctx):
    (ctx.assets / "model").write_text(str(ctx.params["hidden"]))

def reads_batch(ctx):
    (ctx.assets / "model").write_text(str(ctx.params["batch_size"]))
'''


def test_cases_differing_in_run_knobs_prepare_once_and_a_bad_declaration_is_reported(project):
    pytester = project('''
        def case(prepare, batch):
            return Scenario(name="p", prepare=f"preps:{prepare}", run="runners:alloc",
                            params={"mib": 8, "hidden": 4, "batch_size": batch}, prepared_from=("hidden", "mib"))

        @pytest.mark.gpu_budget(ram="2 GiB")
        @pytest.mark.parametrize("batch", [1, 2, 4])
        def test_batches(gpu_budget, batch):
            gpu_budget.measure(case("reads_hidden", batch))

        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_misdeclared(gpu_budget):
            gpu_budget.measure(case("reads_batch", 1))
    ''')
    pytester.makepyfile(preps=PREPS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
                                           "--gpu-budget", "--gpu-budget-update")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*(exception): scenario 'p': prepare read param 'batch_size', which is not in its prepared_from (hidden, mib)*"])
    prepared = [p.name for p in (pytester.path / ".gpu-budget-assets").iterdir() if p.suffix == ".complete"]
    assert len(prepared) == 1, prepared  # three batch sizes, one prepared asset


@pytest.fixture
def hidden_case(project):
    """A project of one case, k, whose prepare (preps:reads_hidden) reads only "hidden", so one prepared asset."""
    pytester = project('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_one(gpu_budget):
            gpu_budget.measure(Scenario(name="k", prepare="preps:reads_hidden", run="runners:alloc",
                                        params={"mib": 1, "hidden": 4}, prepared_from=("hidden",)))
    ''')
    pytester.makepyfile(preps=PREPS)
    return pytester


def test_a_kept_assets_folder_is_honoured_and_a_changed_prepare_rebuilds(hidden_case, tmp_path, monkeypatch):
    """GPU_BUDGET_ASSETS (the GPU runner's folder outside the workspace) holds the assets; editing prepare's
    module changes the key, so a folder kept across runs never serves assets the old code built."""
    pytester = hidden_case
    kept = tmp_path / "kept-assets"
    monkeypatch.setenv("GPU_BUDGET_ASSETS", str(kept))
    args = ("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget")
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=1)
    first = sorted(p.name for p in kept.iterdir())
    assert len(first) == 2 and first[1] == first[0] + ".complete"  # the folder, and its marker beside it
    assert [p.name for p in (kept / first[0]).iterdir()] == ["model"]  # what prepare made alone
    assert not (pytester.path / ".gpu-budget-assets").exists()
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=1)
    assert sorted(p.name for p in kept.iterdir()) == first  # reused
    pytester.makepyfile(preps=PREPS + "\n# prepare's module changed\n")
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=1)
    assert len(list(kept.iterdir())) == 4  # rebuilt under a new key


FAILING_PREPS = '''
import os, signal, time


def half_written(ctx):
    (ctx.assets / "model-00001-of-00002.safetensors").write_bytes(b"\\0" * 2**20)
    if ctx.params["how"] == "raise":
        raise RuntimeError("the second shard did not fit")
    if ctx.params["how"] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
    time.sleep(60)
'''


def test_a_prepare_that_fails_leaves_no_half_written_assets(project, tmp_path, monkeypatch):
    """A prepare that raised, was SIGKILLed or timed out once left its partial folder (KEY.tmp-XXXX) in the kept
    assets folder, one more each run: a real-scale checkpoint half saved is gigabytes."""
    pytester = project('''
        @pytest.mark.parametrize("how", ["raise", "kill", "hang"])
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_one(gpu_budget, how):
            gpu_budget.measure(Scenario(name="h", prepare="preps:half_written", run="runners:alloc",
                                        params={"mib": 1, "how": how}))
    ''')
    pytester.makepyfile(preps=FAILING_PREPS)
    kept = tmp_path / "kept-assets"
    monkeypatch.setenv("GPU_BUDGET_ASSETS", str(kept))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget",
                                           "--gpu-budget-timeout=3")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*the second shard did not fit*", "*killed by SIGKILL*", "*timed out after 3 s*"])
    assert sorted(p.name for p in kept.iterdir()) == []


def test_a_prepare_that_fails_is_the_case_s_error_row_saying_so(project):
    """Its RuntimeError once escaped the gate: the test failed on the plugin's own traceback, the report had no row
    for the case, and the session warned that no test "reached measure()"."""
    import json

    pytester = project('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_one(gpu_budget):
            gpu_budget.measure(Scenario(name="h", prepare="preps:half_written", run="runners:alloc",
                                        params={"mib": 1, "how": "raise"}))
    ''')
    pytester.makepyfile(preps=FAILING_PREPS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget",
                                           "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1)
    said = "*[[]gpu-budget error] preparing assets for 'h' failed (exception): the second shard did not fit"
    result.stdout.fnmatch_lines([said, "*RuntimeError: the second shard did not fit*"])
    assert "reached measure()" not in result.stdout.str()
    (row,) = json.loads((pytester.path / "r.json").read_text())["results"]
    assert row["verdict"] == "error" and "the second shard did not fit" in row["message"]


def test_an_assets_folder_that_cannot_be_made_is_the_case_s_error_row_naming_it(hidden_case):
    """Without pytest's cache the assets live in the rootdir's .gpu-budget-assets; a file there (or a read-only
    rootdir, a full disk) made the folder's mkdir raise in the pytest process: the test failed on pathlib's traceback
    ("FileExistsError: [Errno 17] File exists: '.../.gpu-budget-assets'") with no row for the case."""
    import json

    pytester = hidden_case
    (pytester.path / ".gpu-budget-assets").write_text("a file")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "-p", "no:cacheprovider",
                                           "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1)
    assert "Traceback" not in result.stdout.str() and "without a row" not in result.stdout.str()
    (row,) = json.loads((pytester.path / "r.json").read_text())["results"]
    assert row["verdict"] == "error", row
    assert row["message"].startswith("preparing assets for 'k' failed: the assets folder ") and \
        ".gpu-budget-assets cannot be made or written (File exists)" in row["message"], row["message"]


# -- command scenarios -------------------------------------------------------------------------------------

def test_a_command_scenario_fills_placeholders_per_scale_and_applies_its_fixes_arguments():
    from gpu_budget import Fix

    flag = Fix("checkpointing_flag", "train", "passes --gradient_checkpointing", args=("--gradient_checkpointing",),
               env={"CKPT": "1"})
    s = Scenario(name="c", command=["python", "train.py", "--bs", "{batch_size}", "--model", "{assets}/model"],
                 params={"batch_size": 4}, scales={"tiny": {}, "real": {"batch_size": 16}}, env={"SEQ": "{batch_size}"},
                 supports=(flag,))
    assert s.command_line("real", "/a")["argv"] == ["python", "train.py", "--bs", "16", "--model", "/a/model"]
    fixed = s.with_fixes("checkpointing_flag")
    line = fixed.command_line("tiny", "/a")
    assert line["argv"][-1] == "--gradient_checkpointing" and line["env"] == {"CKPT": "1", "SEQ": "4"}
    assert fixed.to_json("tiny")["command"]["argv"][5] == "{assets}/model"  # the child fills the assets folder


def test_a_fix_s_env_wins_over_the_scenario_s_where_both_name_a_variable():
    from gpu_budget import Fix

    stop = Fix("no_leak", "train", "keeps nothing per step", env={"LEAK_MIB": "0"})
    s = Scenario(name="c", command=["python", "train.py"], env={"LEAK_MIB": "2", "SEQ": "8"}, supports=(stop,))
    assert s.command_line("tiny", "/a")["env"] == {"LEAK_MIB": "2", "SEQ": "8"}
    assert s.with_fixes("no_leak").command_line("tiny", "/a")["env"] == {"LEAK_MIB": "0", "SEQ": "8"}


def test_a_number_or_a_path_in_env_is_written_as_its_text_and_a_fix_s_env_is_checked_too():
    from pathlib import Path

    from gpu_budget import Fix
    from gpu_budget.declare.fixes import FixError

    s = Scenario(name="c", command=["python", "train.py"], env={"STEPS": 4, "HF_HOME": Path("/data/hf")})
    assert s.command_line("tiny", "/a")["env"] == {"STEPS": "4", "HF_HOME": "/data/hf"}
    with pytest.raises(FixError, match=r"fix 'unset': env\['HF_HOME'\]=None: expected a string"):
        Fix("unset", "train", "leaves HF_HOME out", env={"HF_HOME": None})


def test_the_built_in_expandable_segments_fix_sets_the_allocator_variable_for_a_command():
    s = Scenario(name="c", command=["python", "train.py"], env={"SEQ": "8"}).with_fixes("expandable_segments")
    assert s.command_line("tiny", "/a")["env"] == {"SEQ": "8", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}


@pytest.mark.parametrize("kwargs,message", [
    ({"command": ["python", "t.py", "{bs}"]}, r"command placeholder \{bs\} in '\{bs\}' names no param"),
    ({"command": "python t.py"}, "expected a non-empty list of strings"),
    ({"command": []}, "expected a non-empty list of strings"),
    ({"command": ["python", 3]}, "expected a non-empty list of strings"),
    ({"command": iter([])}, "expected a non-empty list of strings"),
    ({"command": 5}, "command=5: expected a non-empty list of strings"),
    ({"command": ["python"], "run": "m:run"}, "give exactly one of run= .* and command="),
    ({}, "give exactly one of run= .* and command="),
    ({"run": "m:run", "cwd": "x"}, "cwd= and env= are for a command scenario"),
    ({"command": ["torchrun", "t.py"], "ranks": 0}, "ranks=0: expected a whole number >= 1"),
    ({"command": ["torchrun", "t.py"], "ranks": "2"}, "ranks='2': expected a whole number >= 1"),
    ({"run": "m:run", "ranks": 2}, "ranks=2 is for a command a launcher runs"),
    ({"command": ["torchrun", "t.py"], "ranks": 2, "gpus": 3}, "gpus=3: expected a whole number from 1 to ranks"),
    ({"command": ["torchrun", "t.py"], "ranks": 2, "gpus": 0}, "gpus=0: expected a whole number from 1 to ranks"),
    ({"command": ["python"], "env": {"HF_HOME": None}}, r"scenario 'bad': env\['HF_HOME'\]=None: expected a string"),
    ({"command": ["python"], "env": {"CUDA_LAUNCH_BLOCKING": True}}, r"env\['CUDA_LAUNCH_BLOCKING'\]=True: expected"),
    ({"command": ["python"], "env": {"ARGS": ["a"]}}, r"env\['ARGS'\]=\['a'\]: expected a string"),
    ({"command": ["python"], "env": "HF_HOME=/data"}, r"scenario 'bad': env='HF_HOME=/data': expected a mapping"),
    ({"command": ["python"], "env": {"HF_HOME=/data": "1"}}, r"env\['HF_HOME=/data'\]: a variable's name "),
    ({"command": ["python"], "env": {"": "1"}}, r"env\[''\]: a variable's name "),
    # set, and read by no program: a padded name, or one a shell could not export
    ({"command": ["python"], "env": {" HF_HOME": "1"}}, r"env\[' HF_HOME'\]: a variable's name .*holds no space"),
    ({"command": ["python"], "env": {"HF HOME": "1"}}, r"env\['HF HOME'\]: a variable's name .*holds no space"),
    # the command started in a folder named " x " (or failed where none is), not in x
    ({"command": ["python"], "cwd": " x "}, (r"cwd=' x ': spaces at its ends would start the command in a folder "
                                            r"named so; write 'x'")),
    ({"command": ["python"], "cwd": "  "}, r"cwd='  ': expected a folder's path"),
    ({"command": ["python"], "env": {"A": "x\0y"}}, r"env\['A'\]='x\\x00y': .*NUL"),
    ({"command": ["python", "t.py\0"]}, r"command=\('python', 't.py\\x00'\): .*NUL"),
])
def test_a_bad_command_scenario_is_an_error_at_declaration(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Scenario(name="bad", **kwargs)


@pytest.mark.parametrize("argument", ['{"use_reentrant": false}', "{}"])
def test_a_json_argument_s_braces_are_said_to_be_written_twice(argument):
    with pytest.raises(ValueError, match=r"a literal brace is written twice: '\{\{' and '\}\}'"):
        Scenario(name="c", command=["python", "t.py", "--gradient_checkpointing_kwargs", argument])
    doubled = argument.replace("{", "{{").replace("}", "}}")
    s = Scenario(name="c", command=["python", "t.py", "--gradient_checkpointing_kwargs", doubled])
    assert s.command_line("tiny", "/a")["argv"][-1] == argument


@pytest.mark.parametrize("template, value, text", [
    ("{max_length}", None, "'None'"), ("{max_length}", [1, 2], "'\\[1, 2\\]'"), ("{max_length}", {"a": 1}, "\"\\{'a': 1\\}\""),
])
def test_a_placeholder_whose_param_has_no_one_text_is_refused_naming_it(template, value, text):
    for where in ({"command": ["python", "t.py", "--max_length", template]}, {"command": ["python"], "env": {"N": template}}):
        with pytest.raises(ValueError, match=rf"scenario 'c': placeholder \{{max_length\}} in '\{{max_length\}}' is "
                                             rf"{re.escape(repr(value))}, which would reach the command as the text {text}"):
            Scenario(name="c", params={"max_length": value}, **where)
    s = Scenario(name="c", command=["python", "t.py", "--fp16", "{fp16}", "--k", "{d[k]}"], params={"fp16": True, "d": {"k": 3}})
    assert s.command_line("tiny", "/a")["argv"][-4:] == ["--fp16", "True", "--k", "3"]  # a bool as HfArgumentParser reads it


def test_a_command_given_as_an_iterator_keeps_every_argument():
    s = Scenario(name="c", command=map(str, ["python", "train.py", "--max_steps", 4]))
    assert s.command_line("tiny", "/a")["argv"] == ["python", "train.py", "--max_steps", "4"]


def test_a_supported_fix_whose_params_the_command_never_reads_is_refused_naming_it():
    """fewer_workers sets dataloader_workers: offered to a command that never reads it, it would run the command
    unchanged and be reported as a fix."""
    from gpu_budget import FixError

    with pytest.raises(FixError, match=r"scenario 'c': fix 'fewer_workers' changes nothing in this command: it sets "
                                       r"dataloader_workers, which no placeholder of the command, its cwd or env reads"):
        Scenario(name="c", command=["python", "train.py", "--mib", "{mib}"], params={"mib": 3},
                 supports=("fewer_workers",))


@pytest.mark.parametrize("kwargs", [
    {"command": ["python", "train.py", "--workers", "{dataloader_workers}"]},
    {"command": ["python", "train.py"], "env": {"WORKERS": "{dataloader_workers}"}},
    {"command": ["python", "train.py"], "prepare": "m:prepare"},  # prepare is handed every param
    {"command": ["python", "train.py"], "prepare": "m:prepare", "prepared_from": ("dataloader_workers",)},
])
def test_a_supported_fix_whose_params_the_command_or_prepare_reads_is_accepted(kwargs):
    s = Scenario(name="c", params={"dataloader_workers": 4}, supports=("fewer_workers",), **kwargs)
    assert s.with_fixes("fewer_workers").params_for("tiny")["dataloader_workers"] == 1


def test_a_param_read_by_another_supported_fix_s_arguments_is_read():
    from gpu_budget import Fix

    flag = Fix("workers_flag", "data", "passes --workers", args=("--workers", "{dataloader_workers}"))
    Scenario(name="c", command=["python", "train.py"], params={"dataloader_workers": 4},
             supports=(flag, "fewer_workers"))


def test_an_applied_fix_whose_params_the_command_never_reads_is_refused_without_supports():
    """Without supports= any registered fix may be applied: one that sets a param the command never reads would leave
    the command as it is while the row says the case ran with it."""
    from gpu_budget import FixError

    said = (r"scenario 'c': fix 'fewer_workers' changes nothing in this command: it sets dataloader_workers, which no "
            r"placeholder of the command, its cwd or env reads \(read it, as \"\{dataloader_workers\}\", or leave the "
            r"fix out of fixes=\)")
    command = {"name": "c", "command": ["python", "train.py", "--mib", "{mib}"], "params": {"mib": 3}}
    with pytest.raises(FixError, match=said):
        Scenario(**command, fixes=("fewer_workers",))
    with pytest.raises(FixError, match=said):
        Scenario(**command).with_fixes("fewer_workers")


@pytest.mark.parametrize("kwargs", [
    {"command": ["python", "train.py", "--workers", "{dataloader_workers}"]},
    {"command": ["python", "train.py"], "cwd": "runs/{dataloader_workers}"},
    {"command": ["python", "train.py"], "prepare": "m:prepare"},  # prepare is handed every param
    {"command": ["python", "train.py"], "prepare": "m:prepare", "prepared_from": ("dataloader_workers",)},
])
def test_an_applied_fix_whose_params_the_command_or_prepare_reads_is_accepted_without_supports(kwargs):
    s = Scenario(name="c", params={"dataloader_workers": 4}, **kwargs).with_fixes("fewer_workers")
    assert s.fixes == ("fewer_workers",) and s.params_for("tiny")["dataloader_workers"] == 1


def test_an_applied_fix_s_params_read_by_another_applied_fix_s_arguments_are_read():
    from gpu_budget import Fix

    flag = Fix("workers_flag_applied", "data", "passes --workers", args=("--workers", "{dataloader_workers}"))
    s = Scenario(name="c", command=["python", "train.py"], params={"dataloader_workers": 4})
    assert s.with_fixes(flag, "fewer_workers").command_line("tiny", ".")["argv"] == ["python", "train.py", "--workers",
                                                                                      "1"]


def test_a_fix_that_says_nothing_of_commands_is_refused_by_a_command_scenario():
    from gpu_budget import FixError

    with pytest.raises(FixError, match="fix 'gc_collect' says nothing of how it applies to a command"):
        Scenario(name="c", command=["python", "t.py"], fixes=("gc_collect",))
    # one that sets params the command reads through a placeholder is accepted
    s = Scenario(name="c", command=["python", "t.py", "--workers", "{dataloader_workers}"],
                 params={"dataloader_workers": 4}).with_fixes("fewer_workers")
    assert s.command_line("tiny", ".")["argv"][-1] == "1"


def test_two_scenarios_with_one_prepare_and_the_same_prepared_params_share_their_assets():
    runner = Scenario(name="s1", prepare="pkg.runner:prepare", run="pkg.runner:run", params={"hidden": 8, "bs": 1},
                      prepared_from=("hidden",))
    script = Scenario(name="s1_script", prepare="pkg.runner:prepare", command=["python", "train.py"],
                      params={"hidden": 8, "bs": 4}, prepared_from=("hidden",))
    assert runner.asset_key("tiny") == script.asset_key("tiny")
    assert runner.asset_key("tiny").startswith("pkg.runner.prepare-tiny-")


def test_a_fix_applied_through_fixes_whose_params_the_knobs_do_not_hold_is_refused_naming_both_values():
    """Scenario(fixes=...) lays no params over the knobs: a command reading {dataloader_workers} would run with 4
    while its row named fewer_workers."""
    from gpu_budget import FixError

    command = {"name": "c", "command": ["python", "train.py", "--workers", "{dataloader_workers}"]}
    with pytest.raises(FixError, match=r"scenario 'c': fix 'fewer_workers' sets dataloader_workers=1, but its params "
                                       r"hold 4 at scale 'tiny': apply it with \.with_fixes\('fewer_workers'\)"):
        Scenario(**command, params={"dataloader_workers": 4}, fixes=("fewer_workers",))
    with pytest.raises(FixError, match="sets dataloader_workers=1, but its params hold unset at scale 'tiny'"):
        Scenario(name="f", run="m:run", fixes=("fewer_workers",))
    held = Scenario(**command, params={"dataloader_workers": 1}, fixes=("fewer_workers",))  # the knobs say what it sets
    assert held.command_line("tiny", ".")["argv"][-1] == "1"


def test_a_param_set_after_a_fix_that_undoes_it_is_refused_at_every_scale():
    from gpu_budget import Fix, FixError

    wide = Fix("wide_rows", "train", "rows of 8", params={"rows": 8}, remedy=False)
    s = Scenario(name="f", run="m:run", params={"rows": 2}, scales={"tiny": {}, "real": {"rows": 64}}, supports=(wide,))
    fixed = s.with_fixes("wide_rows")
    assert fixed.params_for("tiny")["rows"] == fixed.params_for("real")["rows"] == 8
    with pytest.raises(FixError, match="fix 'wide_rows' sets rows=8, but its params hold 2 at scale 'tiny'"):
        fixed.with_params(rows=2)
    with pytest.raises(FixError, match="fix 'wide_rows' sets rows=8, but its params hold 64 at scale 'real'"):
        Scenario(name="f", run="m:run", params={"rows": 8}, scales={"tiny": {}, "real": {"rows": 64}},
                 supports=(wide,), fixes=("wide_rows",))


def module_level(ctx):
    return None


class _Runner:
    def run(self, ctx):
        return None

    def __call__(self, ctx):
        return None

    @classmethod
    def by_class(cls, ctx):
        return None

    @staticmethod
    def static(ctx):
        return None


@pytest.mark.parametrize("func,named", [
    (functools.partial(module_level), "functools.partial"),
    (_Runner().run, "bound method _Runner.run"),
    (_Runner(), "_Runner object"),
    (functools, "module 'functools'"),
])
def test_a_run_that_is_no_module_level_function_is_refused_naming_it(func, named):
    """Its "module:qualname" would name something else in the child (a bound method's plain function, called
    without its instance) or nothing ("functools:"): refused here, not a confusing failure in the child."""
    with pytest.raises(ValueError, match=f"{named}.*must be a module-level function"):
        Scenario(name="s", run=func)


@pytest.mark.parametrize("func,ref", [
    (module_level, "test_scenario:module_level"),
    (_Runner.by_class, "test_scenario:_Runner.by_class"),
    (_Runner.static, "test_scenario:_Runner.static"),
])
def test_a_module_level_function_or_a_class_s_method_is_named_by_its_module_and_name(func, ref):
    assert Scenario(name="s", run=func).run.endswith(ref)


@pytest.mark.parametrize("where", ["params", "scales"])
def test_a_planted_regression_no_placeholder_of_a_command_reads_is_refused_naming_it(where):
    """plant_bytes is held by a runner's measured child; a command's tree does not hold it, so a command scenario
    with it planted ran unchanged while its row said its params differ (a plant that could never fail the gate).
    A command that reads it through a placeholder (its own switch) plants it itself."""
    given = {"params": {"plant_bytes": 2**20}} if where == "params" else {"scales": {"tiny": {"plant_bytes": 2**20}}}
    with pytest.raises(ValueError, match=r"scenario 'cmd': plant_bytes=1048576 .* no placeholder of the command"):
        Scenario(name="cmd", command=["python", "train.py"], **given)
    read = Scenario(name="cmd", command=["python", "train.py", "--leak-bytes", "{plant_bytes}"], **given)
    assert "1048576" in read.command_line("tiny", ".")["argv"]
    assert Scenario(name="cmd", command=["python", "train.py"], params={"plant_bytes": 0}).params == {"plant_bytes": 0}


SLOW_PREPS = '''
import os, time


def slow(ctx):
    (ctx.assets / "model-00001-of-00002.safetensors").write_bytes(b"\\0" * 2**20)
    with open("prepare.pid", "w") as fh:
        fh.write(str(os.getpid()))
    if os.path.exists("slow"):  # the first session's: killed meanwhile
        time.sleep(60)
    (ctx.assets / "model").write_text("1")
'''


def test_the_half_built_assets_of_a_killed_session_are_removed_by_the_next(project, tmp_path, monkeypatch):
    """A session SIGKILLed while a prepare wrote (the OOM killer) removed nothing: its KEY.tmp-XXXX folder, a
    checkpoint half saved, stayed in the kept assets folder for good, one more each kill. The next build of that
    KEY removes it; the built assets alone are left."""
    import signal
    import subprocess
    import sys
    import time

    pytester = project('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_one(gpu_budget):
            gpu_budget.measure(Scenario(name="h", prepare="preps:slow", run="runners:alloc", params={"mib": 1}))
    ''')
    pytester.makepyfile(preps=SLOW_PREPS)
    kept = tmp_path / "kept-assets"
    monkeypatch.setenv("GPU_BUDGET_ASSETS", str(kept))
    (pytester.path / "slow").touch()
    args = ["-p", "no:randomly", "-p", "no:xdist", "-p", "no:cacheprovider", "--gpu-budget"]
    session = subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=pytester.path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        started = pytester.path / "prepare.pid"
        deadline = time.monotonic() + 60
        while not (started.exists() and started.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        session.send_signal(signal.SIGKILL)
        session.wait(30)
    finally:
        if session.poll() is None:
            session.kill()
    assert [p.name for p in kept.iterdir() if ".tmp-" in p.name]  # what the killed session left
    (pytester.path / "slow").unlink()
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=1)
    built, marker = sorted(kept.iterdir())
    assert (built / "model").read_text() == "1" and ".tmp-" not in built.name and marker.name == built.name + ".complete"


@pytest.mark.parametrize("name", ["a/../../x", "x" * 300, "..hidden", "two words"])
def test_a_scenario_name_is_one_folder_in_the_assets_folder(tmp_path, name):
    """Before: the name was the assets folder's name as given, so Scenario(name="a/../../x") gave ctx.assets a path
    two folders above the assets folder, and a 300-character name one past the file system's limit."""
    key = Scenario(name=name, run="m:run").asset_key("tiny")
    assert "/" not in key and not key.startswith(".") and len(key) < 128
    assert (tmp_path / key).resolve().parent == tmp_path.resolve()
    assert key != Scenario(name=name + "_", run="m:run").asset_key("tiny")
    assert Scenario(name="plain", run="m:run").asset_key("tiny").startswith("plain-tiny-")


def test_a_supported_fix_that_cannot_apply_to_a_command_is_refused_when_the_scenario_is_built():
    """declaring.md: a fix with no args, env or params is refused at collection. Listed in a command scenario's
    supports= it was accepted, though with_fixes() of it fails and the search never tries it: the one list of the
    fixes the runner honours held one it could never run."""
    from gpu_budget import Fix, FixError

    bare = Fix("bare_for_commands", "train", "says nothing of arguments or environment")
    said = (r"scenario 'c': fix 'bare_for_commands' says nothing of how it applies to a command \(give it args=, env= "
            r"or params= that the command reads, or leave it out of supports=\)")
    with pytest.raises(FixError, match=said):
        Scenario(name="c", command=["python", "train.py"], supports=(bare,))
    Scenario(name="f", run="m:run", supports=(bare,))  # a runner reads it by name: ctx.has()
