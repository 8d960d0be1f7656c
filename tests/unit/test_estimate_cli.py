"""`python -m gpu_budget estimate`: a case it cannot estimate is a failure naming the case and why, not an exit 0."""

import json
from pathlib import Path

import pytest

from gpu_budget.estimate.cli import main as cli
from gpu_budget.estimate.rows import EstimateRow
from gpu_budget.units import format_size

S5_SPEC = str(Path(__file__).resolve().parents[2] / "memtests" / "s5_generic_oom" / "scenarios.py") + ":S5"


def own_case(tmp_path) -> str:
    """A user's own Scenario, whose runner has no estimator builder registered."""
    (tmp_path / "mine.py").write_text("from gpu_budget import Scenario\n\nMINE = Scenario(name='mine', run='train:run')\n")
    return f"{tmp_path / 'mine.py'}:MINE"


def test_a_case_it_cannot_estimate_exits_1_saying_why(tmp_path, capsys):
    assert cli([own_case(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "no estimate (LookupError: no estimator builder for scenario 'mine' (runner train:run)" in err
    assert err.rstrip().endswith(f"not estimated: 1 of 1 case(s) ({own_case(tmp_path)}): see above")


def test_the_cases_it_can_estimate_are_still_shown_beside_one_it_cannot(tmp_path, capsys):
    out = tmp_path / "est.json"
    assert cli([S5_SPEC, f"mine={own_case(tmp_path)}", "--json", str(out)]) == 1
    assert [r["label"] for r in json.loads(out.read_text())["estimates"]] == [S5_SPEC]
    captured = capsys.readouterr()
    assert f"| {S5_SPEC} |" in captured.out or "| S5 |" in captured.out
    assert "not estimated: 1 of 2 case(s) (mine): see above" in captured.err


CRASHING = '''
from gpu_budget import Scenario
from gpu_budget.estimate import register

CRASH = Scenario(name="crash", run="crashing:crash")
FINE = Scenario(name="fine", run="crashing:fine")
UNBUILT = Scenario(name="unbuilt", run="crashing:unbuilt")
STEPLESS = Scenario(name="stepless", run="crashing:stepless")
register(CRASH.run, "crashing:build")
register(STEPLESS.run, "crashing:build")
register(FINE.run, "crashing:build")
register(UNBUILT.run, "crashing:needs_a_missing_package")


def fine(ctx):
    with ctx.meter.phase("load"):
        pass
    with ctx.meter.phase("train_step_1", step=1):
        held = bytearray(1 << 20)
    return {"held": len(held)}


def stepless(ctx):
    with ctx.meter.phase("load"):
        pass


def crash(ctx):
    ctx.meter.start("load")
    raise RuntimeError("boom in the runner")


def build(p, fixes, device, known):
    import torch

    from gpu_budget.estimate import StepPlan, adamw

    layer = torch.nn.Linear(8, 8)
    return StepPlan(layer, adamw(layer.parameters(), device), [{"x": torch.ones(2, 8)}],
                    loss=lambda m, b: m(b["x"]).sum())


def needs_a_missing_package(p, fixes, device, known):
    import no_such_package_xyz  # noqa: F401
'''


def validate(tmp_path, *cases):
    """The CLI's --validate in a subprocess (its measured children come from its own forkserver), in tmp_path."""
    import subprocess
    import sys

    (tmp_path / "crashing.py").write_text(CRASHING)
    return subprocess.run([sys.executable, "-m", "gpu_budget", "estimate", "--validate", "--json", "v.json", *cases],
                          check=False, capture_output=True, text=True, cwd=tmp_path, timeout=600)


def test_a_validated_case_whose_real_run_crashes_is_a_failure_naming_why(tmp_path):
    done = validate(tmp_path, "crashing.py:CRASH")
    assert done.returncode == 1, done.stdout + done.stderr
    failure = "exception: builtins.RuntimeError: boom in the runner"
    assert f"crashing.py:CRASH: the real run failed ({failure}): no measured figure" in done.stdout
    assert "not validated: 1 of 1 case(s) (crashing.py:CRASH): see above" in done.stderr
    (row,) = json.loads((tmp_path / "v.json").read_text())["rows"]
    assert row["status"] == "error" and row["failure"] == failure


def test_a_validated_case_whose_real_run_took_no_step_is_a_failure_naming_why(tmp_path):
    """A run with no train step has no step peak to put the estimate beside: not validated, not an exit 0."""
    done = validate(tmp_path, "crashing.py:STEPLESS")
    assert done.returncode == 1, done.stdout + done.stderr
    failure = "no train step ran (no phase marked step=): no step peak to compare the estimate with"
    assert f"crashing.py:STEPLESS: the real run failed ({failure}): no measured figure" in done.stdout
    assert "not validated: 1 of 1 case(s) (crashing.py:STEPLESS): see above" in done.stderr
    (row,) = json.loads((tmp_path / "v.json").read_text())["rows"]
    assert row["status"] == "ok" and row["failure"] == failure and row["steps_measured"] == 0


def test_a_validated_case_it_cannot_estimate_is_named_and_the_others_still_validated(tmp_path):
    done = validate(tmp_path, "crashing.py:UNBUILT", "crashing.py:FINE")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    said = "crashing.py:UNBUILT: no estimate (ModuleNotFoundError: No module named 'no_such_package_xyz')"
    assert said in done.stderr
    assert "not validated: 1 of 2 case(s) (crashing.py:UNBUILT): see above" in done.stderr
    saved = json.loads((tmp_path / "v.json").read_text())
    (row,) = saved["rows"]
    assert row["label"] == "crashing.py:FINE" and row["status"] == "ok" and row["measured_step_peak"] > 0
    # the table printed (and saved, and rendered) says so too, not the terminal's stderr alone
    why = "ModuleNotFoundError: No module named 'no_such_package_xyz'"
    assert f"crashing.py:UNBUILT: not estimated ({why}): no row in the table" in done.stdout, done.stdout
    assert saved["not_estimated"] == {"crashing.py:UNBUILT": why}


def test_validate_writes_only_its_tables_to_stdout_and_its_progress_to_stderr(tmp_path):
    """`estimate --validate CASE > table.md`: the file holds the tables, the progress lines go to the terminal."""
    done = validate(tmp_path, "crashing.py:FINE")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Floor (an empty measured child"), done.stdout
    assert "floor (empty child): " in done.stderr and "crashing.py:FINE: estimate " in done.stderr


def test_steps_below_one_is_a_usage_error_naming_the_value(capsys):
    for bad in ("0", "-3", "two"):
        with pytest.raises(SystemExit) as stopped:
            cli(["--steps", bad, S5_SPEC])
        assert stopped.value.code == 2
        assert f"argument --steps: {bad!r} is not a number of optimizer steps (1 or more)" in capsys.readouterr().err


def test_steps_with_as_run_is_a_usage_error(tmp_path, capsys):
    """--as-run estimates the run's own steps: a --steps beside it was estimated as nothing, without a word."""
    with pytest.raises(SystemExit) as stopped:
        cli(["--as-run", "--steps", "7", S5_SPEC, "--json", str(tmp_path / "est.json")])
    assert stopped.value.code == 2
    assert "--steps does not apply to --as-run: it estimates the run's own steps" in capsys.readouterr().err
    assert not (tmp_path / "est.json").exists()


@pytest.mark.parametrize("option", ["--cuda-context", "--cublas-workspace"])
def test_a_cuda_size_without_cuda_mode_is_a_usage_error(option, tmp_path, capsys):
    """A CPU estimate is host RAM: a CUDA context or workspace added to it would be a figure of nothing."""
    with pytest.raises(SystemExit) as stopped:
        cli([option, "500 MiB", S5_SPEC, "--json", str(tmp_path / "est.json")])
    assert stopped.value.code == 2
    assert f"{option} '500 MiB' is a GPU size: it needs --cuda" in capsys.readouterr().err
    assert not (tmp_path / "est.json").exists()


@pytest.mark.parametrize(("option", "given", "said"), [
    ("--cuda-context", "500", "'500' is a bare number: give it a unit, e.g. '500 MiB'"),
    ("--cublas-workspace", "8320", "'8320' is a bare number: give it a unit, e.g. '8320 KiB'"),
    ("--cuda-context", "", "'' is no size: give one with its unit, e.g. '500 MiB', or leave the option out"),
])
def test_a_cuda_size_without_its_unit_is_a_usage_error(option, given, said, tmp_path, capsys):
    """Before: `--cuda-context 500` was read as 500 bytes and `--cuda-context ''` as no context, each estimated
    without a word (exit 0) though the help asks for '500 MiB'; a marker's budget refuses a bare number the same way."""
    with pytest.raises(SystemExit) as stopped:
        cli(["--cuda", option, given, S5_SPEC, "--json", str(tmp_path / "est.json")])
    assert stopped.value.code == 2
    assert f"argument {option}: {said}" in capsys.readouterr().err
    assert not (tmp_path / "est.json").exists()



@pytest.mark.parametrize(("option", "given", "said"), [
    ("--cuda-context", "-5MiB", "not a memory size: '-5MiB'"),
    ("--cuda-context", "1e3 MiB", "not a memory size: '1e3 MiB'"),
    ("--cublas-workspace", "5XB", "unknown unit 'XB' in memory size '5XB'"),
])
def test_an_unreadable_cuda_size_names_its_option(option, given, said, tmp_path, capsys):
    """Before: `--cuda-context=-5MiB` printed `error: not a memory size: '-5MiB'`, the option left for the user to
    guess among the command's sizes."""
    with pytest.raises(SystemExit) as stopped:
        cli(["--cuda", f"{option}={given}", S5_SPEC])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: {said}" in err, err
    assert "or bytes" not in err, err  # the option refuses a bare number of bytes: its hint offers none

ASSUMING = '''
from gpu_budget import Scenario
from gpu_budget.estimate import register

GUESSED = Scenario(name="guessed", run="assuming:run")
register(GUESSED.run, "assuming:build")


def build(p, fixes, device, known):
    import torch

    from gpu_budget.estimate import StepPlan, adamw

    layer = torch.nn.Linear(8, 8)
    return StepPlan(layer, adamw(layer.parameters(), device), [{"x": torch.ones(2, 8)}],
                    loss=lambda m, b: m(b["x"])[:, m.weight[0] > 0].sum(),  # a mask computed from weights
                    notes=["dropout off: the run's dropout draws are left out"])
'''


def test_a_printed_estimate_carries_the_notes_and_assumptions_it_rests_on(tmp_path, capsys):
    """A figure resting on values the estimator could not know, or on a builder's simplification, says so where it
    is printed, not only in --json."""
    (tmp_path / "assuming.py").write_text(ASSUMING)
    assert cli([f"guessed={tmp_path / 'assuming.py'}:GUESSED"]) == 0
    out = capsys.readouterr().out
    assert "guessed: note: dropout off: the run's dropout draws are left out" in out
    (assumed,) = [line for line in out.splitlines() if line.startswith("guessed: assumed ")]
    assert "values it cannot know (computed from weights or random numbers; docs/estimator.md): " in assumed
    assert "aten.index.Tensor x2" in assumed  # the mask, once per step's forward


def test_a_file_it_cannot_render_is_a_usage_error_naming_it(tmp_path, capsys):
    (tmp_path / "report.json").write_text('{"rows_of_another_tool": []}')
    (tmp_path / "table.md").write_text("| case |\n")
    for name, why in (("missing.json", "No such file or directory"), ("table.md", "not JSON"),
                      ("report.json", "not a file `estimate --json` wrote (no 'estimates' or 'rows')")):
        with pytest.raises(SystemExit) as stopped:
            cli(["--render", str(tmp_path / name)])
        assert stopped.value.code == 2
        assert f"--render {tmp_path / name}: {why}" in capsys.readouterr().err


@pytest.mark.parametrize(("saved", "said"), [
    ({"estimates": 5}, "TypeError"),
    ({"estimates": [{"label": "a"}]}, "KeyError: 'scenario'"),
    ({"rows": [1]}, "KeyError: 'floor'"),
])
def test_a_saved_file_with_malformed_rows_is_a_usage_error_naming_it(saved, said, tmp_path, capsys):
    """Before: a file with the right top-level key but rows `estimate --json` never writes (edited by hand, another
    version's) ended in a traceback (TypeError, KeyError) and exit 1."""
    path = tmp_path / "v.json"
    path.write_text(json.dumps(saved))
    with pytest.raises(SystemExit) as stopped:
        cli(["--render", str(path)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"--render {path}: not a file `estimate --json` wrote (a malformed row: {said}" in err, err


@pytest.mark.parametrize(("content", "said"), [
    ("", "an empty file"),
    ("\n", "an empty file"),
    (json.dumps({"scale": "tiny", "device": "cpu", "cases": {}, "estimates": []}), "no estimate in it"),
    (json.dumps({"estimates": None}), "no estimate in it"),
    (json.dumps({"floor": 1, "rows": [], "scale": "tiny", "threads": 1, "preload": []}), "no validation row in it"),
])
def test_a_file_with_nothing_to_render_is_a_usage_error_naming_it(content, said, tmp_path, capsys):
    """Before: a saved file without a row printed a table of headers alone, exit 0 (an empty file: 'not JSON
    (Expecting value: line 1 column 1 (char 0))')."""
    path = tmp_path / "v.json"
    path.write_text(content)
    with pytest.raises(SystemExit) as stopped:
        cli(["--render", str(path)])
    assert stopped.value.code == 2
    captured = capsys.readouterr()
    assert f"--render {path}: {said}: nothing to render" in captured.err, captured.err
    assert captured.out == ""


def test_one_label_for_two_cases_is_a_usage_error_naming_it(capsys):
    """Before: `a=S5+smaller_batch a=S5` estimated S5 alone, under `a`, exit 0: the first case was dropped without
    a word."""
    with pytest.raises(SystemExit) as stopped:
        cli([f"a={S5_SPEC}+smaller_batch", f"a={S5_SPEC}"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"label 'a' names two cases ({S5_SPEC}+smaller_batch and {S5_SPEC}): give each its own" in err, err


def test_an_empty_label_is_a_usage_error(capsys):
    """Before: `=SPEC` estimated the case under an empty label: a table row with no name."""
    with pytest.raises(SystemExit) as stopped:
        cli([f"={S5_SPEC}"])
    assert stopped.value.code == 2
    assert f"case '={S5_SPEC}': the LABEL before '=' is empty" in capsys.readouterr().err


def saved_estimate(tmp_path) -> Path:
    """A file as `estimate --json` writes it, with one row."""
    row = EstimateRow("a", "s5", (), "tiny", "tensors", 3 << 20, {"parameters": 1 << 20}, "train_step_1", 0.5, None,
                      (), {}, {}, None, None)
    path = tmp_path / "v.json"
    path.write_text(json.dumps({"scale": "tiny", "device": "cpu", "cases": {}, "estimates": [row.to_json()]}))
    return path


@pytest.mark.parametrize("given", [[S5_SPEC], ["--cuda"], ["--validate"], ["--steps", "3"], ["--json", "x.json"], ["--card", "T4"]])
def test_render_refuses_what_it_would_ignore(given, tmp_path, capsys):
    """Before: `--render v.json CASE --cuda ...` printed the saved tables, exit 0, the case never estimated and the
    options dropped without a word."""
    with pytest.raises(SystemExit) as stopped:
        cli(["--render", str(saved_estimate(tmp_path)), *given])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "--render prints a saved file's tables: " in err and "not apply to it" in err, err


def test_render_writes_its_tables_to_the_output_given(tmp_path, capsys):
    """Before: `--render v.json -o table.md` printed the tables and wrote no table.md, exit 0."""
    out = tmp_path / "table.md"
    assert cli(["--render", str(saved_estimate(tmp_path)), "-o", str(out)]) == 0
    assert out.read_text() == capsys.readouterr().out


@pytest.mark.parametrize("option", ["-o", "--json"])
def test_an_output_file_in_no_folder_is_refused_before_estimating(option, tmp_path, capsys):
    target = tmp_path / "no" / "such" / "out"
    with pytest.raises(SystemExit) as stopped:
        cli([option, str(target), S5_SPEC])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"{option} {target}: no folder {target.parent}" in err and "estimate)" not in err  # nothing estimated


@pytest.mark.parametrize("option", ["-o", "--json"])
def test_an_output_file_that_is_a_folder_is_refused_before_estimating(option, tmp_path, capsys):
    """Before: the folder passed the check (its parent is a folder), the cases were estimated, then writing ended in
    a traceback (IsADirectoryError) and exit 1, and a --json after a failed -o was never written."""
    with pytest.raises(SystemExit) as stopped:
        cli([option, str(tmp_path), S5_SPEC])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"{option} {tmp_path}: a folder, not a file" in err and "estimate)" not in err  # nothing estimated


@pytest.mark.parametrize("option", ["-o", "--json"])
def test_an_output_file_that_is_a_baseline_file_is_refused_before_estimating(option, tmp_path, capsys):
    """A forgotten path left on a baseline file: the estimate's table or JSON replaced the baselines the next run is
    judged by (the session's --gpu-budget-json refused it, the estimator did not)."""
    stored = tmp_path / "test_train.json"
    stored.write_text('{"schema": "gpu-budget-baselines/1", "entries": {}}')
    with pytest.raises(SystemExit) as stopped:
        cli([option, str(stored), S5_SPEC])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"{option} {stored}: a baseline file (schema 'gpu-budget-baselines/1')" in err and "estimate)" not in err
    assert stored.read_text() == '{"schema": "gpu-budget-baselines/1", "entries": {}}'


@pytest.mark.parametrize("given", [["--steps", "4"], ["--steps", "2"], ["--as-run"]])
def test_validate_refuses_the_options_it_would_ignore(given, capsys):
    """--validate estimates each case as its real run is measured: a step count or --as-run given with it would be
    dropped without a word, and the table read as if it applied."""
    with pytest.raises(SystemExit) as stopped:
        cli(["--validate", *given, S5_SPEC])
    assert stopped.value.code == 2
    assert f"{given[0]} does not apply to --validate" in capsys.readouterr().err


def test_a_cuda_context_given_is_in_the_table_and_none_given_adds_no_column(tmp_path, capsys):
    """--cuda-context makes each case's device figure (the estimate plus the context): the table shows it beside the
    estimate, not only --json; without one the table has no such column."""
    out = tmp_path / "est.json"
    assert cli(["--cuda", "--cuda-context", "300 MiB", "--json", str(out), f"s5={S5_SPEC}"]) == 0
    header, _, row = capsys.readouterr().out.splitlines()[:3]
    (saved,) = json.loads(out.read_text())["estimates"]
    columns = [c.strip() for c in header.strip("|").split("|")]
    cells = dict(zip(columns, (c.strip() for c in row.strip("|").split("|")), strict=True))
    assert cells["with the CUDA context"] == format_size(saved["device_peak"])
    assert saved["device_peak"] == saved["estimate"] + 300 * 2**20
    assert cli(["--cuda", f"s5={S5_SPEC}"]) == 0
    assert "CUDA context" not in capsys.readouterr().out.splitlines()[0]


def test_a_batch_size_no_batch_can_have_is_named_not_the_builders_own_error(tmp_path, capsys):
    """A batch of 0 examples (or 1, halved by smaller_batch) is said as the param and value, not as the builder's
    ZeroDivisionError or a reshape it could not do."""
    (tmp_path / "batches.py").write_text(f"import sys\nsys.path.insert(0, {str(Path(S5_SPEC).parents[1])!r})\n"
                                         "from s5_generic_oom.scenarios import S5\n"
                                         "EMPTY = S5.with_params(batch_size=0)\nONE = S5.with_params(batch_size=1)\n")
    cases = [f"empty={tmp_path / 'batches.py'}:EMPTY", f"halved={tmp_path / 'batches.py'}:ONE+smaller_batch"]
    assert cli(cases) == 1
    err = capsys.readouterr().err
    assert "empty: no estimate (ValueError: batch_size=0: a batch holds 1 example or more)" in err
    assert ("halved: no estimate (ValueError: batch_size=1: a batch holds 2 examples or more under smaller_batch, "
            "which halves it)") in err
    assert "ZeroDivisionError" not in err


@pytest.mark.parametrize(("text", "said"), [
    ("def broken(:\n", "SyntaxError: "),
    ("raise RuntimeError('no data folder')\n", "RuntimeError: no data folder"),
    ("import no_such_dependency_here\n", "ModuleNotFoundError: No module named 'no_such_dependency_here'"),
])
def test_a_case_module_that_fails_to_import_is_a_usage_error_naming_it(text, said, tmp_path, capsys):
    """Before: a case's module that raised on import (a syntax error, its own error, a dependency not installed)
    ended the command in a traceback, exit 1."""
    (tmp_path / "cases_here.py").write_text(text)
    with pytest.raises(SystemExit) as stopped:
        cli([f"{tmp_path / 'cases_here.py'}:S"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"case '{tmp_path / 'cases_here.py'}:S': importing {tmp_path / 'cases_here.py'} failed: {said}" in err, err
    assert "Traceback" not in err


def test_a_module_case_whose_dependency_is_missing_names_the_dependency(tmp_path, capsys, monkeypatch):
    """Before: `mod:S` whose module imports a package not installed said "no module 'dep' on sys.path (give a path
    instead ...)", as if `mod` itself were not found."""
    (tmp_path / "cases_mod_here.py").write_text("import no_such_dependency_here\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SystemExit):
        cli(["cases_mod_here:S"])
    err = capsys.readouterr().err
    assert "importing cases_mod_here failed: ModuleNotFoundError: No module named 'no_such_dependency_here'" in err, err


def test_an_output_that_is_the_file_rendered_or_the_other_output_is_refused(tmp_path, capsys):
    """Before: `--render v.json -o v.json` wrote the markdown over the saved JSON, and `-o x --json x` wrote the JSON
    over the markdown, exit 0 both."""
    saved = saved_estimate(tmp_path)
    kept = saved.read_text()
    twice = f"--json {saved}: the same file as {saved}, the -o output"
    for argv, said in ((["--render", str(saved), "-o", str(saved)], f"-o {saved}: the same file as {saved}, an input"),
                       (["-o", str(saved), "--json", str(saved), S5_SPEC], twice)):
        with pytest.raises(SystemExit) as stopped:
            cli(argv)
        assert stopped.value.code == 2
        err = capsys.readouterr().err
        assert said in err, err
    assert saved.read_text() == kept


def test_a_saved_file_that_is_not_utf8_is_a_usage_error_naming_it(tmp_path, capsys):
    """Before: `--render` of a file not UTF-8 (a binary, a file in another encoding) ended in a traceback
    (UnboundLocalError: cannot access local variable 'text') and exit 1."""
    path = tmp_path / "v.json"
    path.write_bytes(b"\xff\xfe{}")
    with pytest.raises(SystemExit) as stopped:
        cli(["--render", str(path)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"--render {path}: not UTF-8 text (invalid start byte at byte 0): not a file `estimate --json` wrote" in err, err


@pytest.mark.parametrize("option", ["-o", "--json"])
def test_an_output_that_is_a_case_module_is_refused(option, tmp_path, capsys):
    """Before: `--json scenarios.py scenarios.py:S5` estimated S5, then wrote the JSON over scenarios.py, the case's
    own module, exit 0 (a case that could not be estimated: exit 1, the module overwritten all the same)."""
    case = own_case(tmp_path)
    module = tmp_path / "mine.py"
    kept = module.read_text()
    with pytest.raises(SystemExit) as stopped:
        cli([option, str(module), case])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"{option} {module}: the same file as {module}, the module of case {case}: name another" in err, err
    assert module.read_text() == kept


LACKING = '''
from gpu_budget import Scenario
from gpu_budget.estimate import register

LACKS = Scenario(name="lacks", run="lacking:run", params={"hidden": 8}, scales={"tiny": {"seq": 4}})
register(LACKS.run, "lacking:build")


def build(p, fixes, device, known):
    import torch

    from gpu_budget.estimate import StepPlan, adamw

    layer = torch.nn.Linear(p["hidden"], 8)
    return StepPlan(layer, adamw(layer.parameters(), device), [{"x": torch.ones(p["batch_size"], 8)}],
                    loss=lambda m, b: m(b["x"]).sum())
'''


def test_a_builder_reading_a_param_the_scenario_lacks_names_it_the_scenario_and_its_params(tmp_path, capsys):
    """Before: `no estimate (KeyError: 'batch_size')`, which said neither whose param it was nor what the scenario
    gives at that scale."""
    (tmp_path / "lacking.py").write_text(LACKING)
    assert cli([f"lacks={tmp_path / 'lacking.py'}:LACKS"]) == 1
    err = capsys.readouterr().err
    assert ("lacks: no estimate (MissingParam: the estimator builder of scenario 'lacks' read param 'batch_size', "
            "which the scenario does not give at scale tiny (its params there: hidden, seq)") in err
