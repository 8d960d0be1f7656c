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


class _Built(Exception):
    """Raised in place of parsing: carries the parser a command built."""


def _parsers(monkeypatch, argv: list[str]) -> list:
    """The parser `python -m gpu_budget ARGV` builds, and each sub-command's parser under it."""
    import argparse

    from gpu_budget.against import bisect
    from gpu_budget.estimate import cli as estimate
    from gpu_budget.judge import baselines_cli
    from gpu_budget.report import findings

    def caught(parser, *_args, **_kwargs):
        raise _Built(parser)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", caught)
    main = {"findings": findings.main, "estimate": estimate.main, "baselines": baselines_cli.main,
            "bisect": bisect.main}[argv[0]]
    with pytest.raises(_Built) as built:
        main(argv[1:])
    found, todo = [], [built.value.args[0]]
    while todo:
        parser = todo.pop()
        found.append(parser)
        todo += [sub for action in parser._actions if isinstance(action, argparse._SubParsersAction)
                 for sub in action.choices.values()]
    return found


@pytest.mark.parametrize("command", ["findings", "estimate", "baselines", "bisect"])
def test_every_argument_of_every_command_says_what_it_is(command, monkeypatch):
    """--help is where a user learns a command: an option or a positional without a line there is a thin page."""
    import argparse

    for parser in _parsers(monkeypatch, [command]):
        bare = [action.dest for action in parser._actions
                if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) and not action.help]
        assert bare == [], f"{parser.prog}: no help for {bare}"
        assert parser.description, f"{parser.prog}: no description"
