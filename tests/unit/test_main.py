"""`python -m gpu_budget`: its help and version are answers (exit 0), an unknown command a usage error naming it (exit 2)."""

import subprocess
import sys
from pathlib import Path

import pytest
import tomllib


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpu_budget", *args], check=False, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("flag", ["--help", "-h", "help"])
def test_help_prints_the_usage_and_exits_0(flag):
    done = run(flag)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m gpu_budget [--version] <command> ...")
    assert all(f"  {command}: " in done.stdout for command in ("findings", "estimate", "baselines", "options"))


def test_an_unknown_command_is_named_and_exits_2():
    done = run("nope")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("python -m gpu_budget: unknown command 'nope'\nusage: python -m gpu_budget [--version] <command>")


def test_no_command_prints_the_usage_and_exits_2():
    done = run()
    assert done.returncode == 2 and done.stderr.startswith("usage: python -m gpu_budget [--version] <command> ...")


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_the_version_is_the_one_pyproject_gives(flag):
    """One version source: pyproject.toml's, read from the installed distribution."""
    declared = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]["version"]
    done = run(flag)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"pytest-gpu-budget {declared}\n"


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_an_answer_given_arguments_is_a_usage_error_naming_them(flag):
    """Before: `python -m gpu_budget --version findings r.json` printed the version and exited 0, the rest ignored."""
    done = run(flag, "findings", "r.json")
    assert done.returncode == 2, done
    assert done.stderr.startswith(f"python -m gpu_budget: {flag} takes no arguments; got 'findings r.json'")
