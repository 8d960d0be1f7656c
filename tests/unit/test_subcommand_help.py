"""Every `python -m gpu_budget` command answers --help with its usage (exit 0), and `estimate` tells a command case
what it can estimate instead of advising a registration a command cannot make."""

import subprocess
import sys
import textwrap

import pytest

COMMANDS = ("findings", "estimate", "baselines", "options", "bisect")


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpu_budget", *args], check=False, capture_output=True, text=True,
                          timeout=120, cwd=cwd)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_commands_help_prints_its_usage_and_exits_0(command):
    done = run(command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: python -m gpu_budget {command} "), done.stdout[:300]
    assert "| option |" not in done.stdout  # options --help is help, not the table


def test_options_without_help_still_prints_the_table():
    done = run("options")
    assert done.returncode == 0, done.stderr
    assert "--gpu-budget-json" in done.stdout and "usage:" not in done.stdout


def test_estimate_on_a_command_case_says_it_models_function_cases_and_how_to_write_one(tmp_path):
    (tmp_path / "cases.py").write_text(textwrap.dedent('''
        from gpu_budget import Scenario
        SCRIPT = Scenario(name="script", command=["python", "train.py"])
    '''))
    done = run("estimate", "cases.py:SCRIPT", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "scenario 'script' is a command case (Scenario(command=...)): the estimator models function cases only" \
        in done.stderr, done.stderr
    assert 'gpu_budget.estimate.register("your.module:run", "your.module:build")' in done.stderr, done.stderr
    assert "register(run_ref" not in done.stderr and "runner None" not in done.stderr, done.stderr
    validating = run("estimate", "--validate", "cases.py:SCRIPT", cwd=tmp_path)
    assert validating.returncode == 2 and "is a command case" in validating.stderr, validating.stderr
