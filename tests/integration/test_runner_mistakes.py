"""A runner's own mistakes fail its case naming them, not with what they broke inside the measured child."""

import json

from inner_session import rows

RUNNERS = '''
def returns_a_list(ctx):
    with ctx.meter.phase("train_step_1", step=1):
        pass
    return ["trainable", 12]
'''

TESTS = '''

@pytest.mark.gpu_budget(ram="8 GiB")
def test_list(gpu_budget):
    gpu_budget.measure(Scenario(name="l", run="runners:returns_a_list"))
'''


def test_a_runner_that_returns_no_dict_fails_naming_what_it_returned(project_of):
    """It once failed with "'list' object is not a mapping", raised by the child merging it into the row's facts."""
    result = project_of(RUNNERS)(TESTS).runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget")
    result.assert_outcomes(failed=1)
    said = "runners:returns_a_list returned a list (['trainable', 12]): expected a dict of facts for the report, or None"
    assert said in result.stdout.str()


IMPORTED_BY_PATH = '''
import pytest
from gpu_budget import Scenario


def here(ctx):
    pass


@pytest.mark.gpu_budget(ram="8 GiB")
def test_here(gpu_budget):
    gpu_budget.measure(Scenario(name="h", run=here))
'''


def test_a_runner_in_a_module_the_child_cannot_import_fails_saying_why(pytester, monkeypatch):
    """Under --import-mode=importlib pytest imports a test module by its path, putting no folder on sys.path: its
    function, named "sub.test_mem:here", once failed with a bare "No module named 'sub'" (run from its folder, it
    passed: the working directory was on sys.path)."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    (pytester.path / "sub").mkdir()
    (pytester.path / "sub" / "test_mem.py").write_text(IMPORTED_BY_PATH)
    monkeypatch.chdir(pytester.path.parent)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget",
                                           "--import-mode=importlib", "--rootdir", str(pytester.path), str(pytester.path))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([("*sub.test_mem:here: No module named 'sub' on the measured child's sys.path*"
                                  "--import-mode=importlib*`pythonpath` ini option*")])


FACTS = '''
def tuple_keys(ctx):
    ctx.meter.info[("lora", "v_proj")] = 4
    with ctx.meter.phase("train_step_1", step=1):
        if ctx.params.get("fail"):
            raise RuntimeError("the runner's own failure")
    return {("lora", "q_proj"): 8, "ranks": {1: "one"}}
'''

FACT_TESTS = '''

@pytest.mark.parametrize("fail", [False, True])
@pytest.mark.gpu_budget(ram="8 GiB")
def test_facts(gpu_budget, fail):
    gpu_budget.measure(Scenario(name="f", run="runners:tuple_keys", params={"fail": fail}))
'''


def test_facts_keyed_by_no_string_reach_the_row_and_never_hide_the_run_s_own_failure(project_of, pytester):
    """A fact keyed by a tuple (a LoRA target, a pair of layers) once failed a finished run ("keys must be str, int,
    float, bool or None, not tuple"), and in ctx.meter.info it lost a failed run's own error and traceback: "exited
    with code 0 without a result". Keys become their str, as values that are no JSON do."""
    inner = project_of(FACTS)(FACT_TESTS)
    result = inner.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*measured child failed (exception): the runner's own failure*"])
    found = rows(pytester)
    assert found["test_facts[False]"]["info"]["('lora', 'q_proj')"] == 8
    assert found["test_facts[False]"]["info"]["ranks"] == {"1": "one"}
    assert found["test_facts[True]"]["info"]["('lora', 'v_proj')"] == 4


LOSSES = '''
def losses(ctx):
    ctx.meter.info["first_loss"] = float("inf")
    with ctx.meter.phase("train_step_1", step=1):
        pass
    return {"train_loss": float("nan"), "eval_loss": float("-inf"), "grad_norm": 1.5, "by_step": [float("nan"), 0.5]}
'''

LOSS_TESTS = '''

@pytest.mark.gpu_budget(ram="8 GiB")
def test_losses(gpu_budget):
    gpu_budget.measure(Scenario(name="l", run="runners:losses"))
'''


def test_a_fact_that_is_no_number_of_json_reaches_the_report_as_its_str(project_of, pytester):
    """A diverged run's train_loss (NaN) or an infinite eval_loss, returned as facts, went into the JSON report as
    NaN and -Infinity, which no strict JSON reader (JSON.parse, jq, Python's json without its extensions) reads: the
    whole report was lost to them. They go as "nan" and "-inf", as other values that are no JSON do."""
    inner = project_of(LOSSES)(LOSS_TESTS)
    result = inner.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1)

    def refused(constant):
        raise ValueError(f"{constant} is no JSON")

    report = json.loads((pytester.path / "r.json").read_text(), parse_constant=refused)
    (row,) = report["results"]
    assert {k: row["info"][k] for k in ("train_loss", "eval_loss", "grad_norm", "by_step", "first_loss")} == {
        "train_loss": "nan", "eval_loss": "-inf", "grad_norm": 1.5, "by_step": ["nan", 0.5], "first_loss": "inf"}
