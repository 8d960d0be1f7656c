"""session/misspelt.py: an ini key of the gate's no option has stops the session, naming it; pytest's other unknown
keys stay its warning. Before, `gpu_bugdet = true` warned "Unknown config option" and the run passed, every
memory-budget test skipped."""

import pytest

from gpu_budget.session.misspelt import refusal

TEST = "import pytest\n\n@pytest.mark.gpu_budget(ram='1 GiB')\ndef test_mem(gpu_budget):\n    pass\n\n\ndef test_plain():\n    pass\n"


@pytest.mark.parametrize(("key", "meant"), [
    ("gpu_bugdet", "gpu_budget"),  # the switch itself: every memory-budget test skipped, the run passed
    ("gpu_budget_require_gppu", "gpu_budget_require_gpu"),  # a GPU job on a runner without one passed
    ("gpu_budget_timout", "gpu_budget_timeout"),
    ("gpu-budget-scale", "gpu_budget_scale"),  # the flag's spelling
    ("gpu_budget_treads", "gpu_budget_threads"),
])
def test_a_misspelt_key_is_refused_naming_it_and_the_option_meant(key, meant):
    assert refusal(f"Unknown config option: {key}\n", "pytest.ini") == (
        f"pytest.ini: {key!r} is no option of pytest-gpu-budget, and pytest would run on without it: did you mean "
        f"{meant!r}? the options: python -m gpu_budget options (docs/options.md)")


def test_a_key_of_the_gates_namespace_like_none_of_its_options_is_refused_without_a_guess():
    assert refusal("Unknown config option: GPU_Budget_vram_limit", "-o GPU_Budget_vram_limit") == (
        "-o GPU_Budget_vram_limit: 'GPU_Budget_vram_limit' is no option of pytest-gpu-budget, and pytest would run on "
        "without it: the options: python -m gpu_budget options (docs/options.md)")


@pytest.mark.parametrize("message", ["Unknown config option: timeout\n", "Unknown config option: asyncio_mode\n",
                                     "Unknown config option: budget\n", "something else: gpu_budget_x"])
def test_other_keys_and_warnings_are_left_to_pytest(message):
    assert refusal(message, "pytest.ini") is None


@pytest.mark.parametrize("args", [(), ("-n", "2")])
def test_a_session_with_a_misspelt_key_stops_before_any_test_runs(pytester, args):
    pytester.makeini("[pytest]\ngpu_bugdet = true\n")
    pytester.makepyfile(TEST)
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    error = f"ERROR: {pytester.path / 'tox.ini'}: 'gpu_bugdet' is no option of pytest-gpu-budget, * did you mean 'gpu_budget'? *"
    result.stderr.fnmatch_lines([error])
    assert "passed" not in result.stdout.str() and "skipped" not in result.stdout.str()


def test_a_misspelt_key_given_with_o_is_named_there(pytester):
    pytester.makepyfile(TEST)
    result = pytester.runpytest_subprocess("-o", "gpu_budget_require_gppu=true")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: -o gpu_budget_require_gppu: 'gpu_budget_require_gppu' is no option *"])


def test_another_unknown_key_stays_a_warning(pytester):
    pytester.makeini("[pytest]\nnot_ours = 1\n")
    pytester.makepyfile(TEST)
    result = pytester.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*Unknown config option: not_ours*", "*1 passed, 1 skipped*"])
