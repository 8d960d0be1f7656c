"""README's "Commands" and docs/layout.md name the commands `python -m gpu_budget` has, each answering `--help`.

The commands are listed in `__main__.main`; a command added there and left out of README (or one removed and still
listed) is a command users cannot find, or one they are sent to that says "unknown command".
"""

import os
import re
import subprocess
import sys

from doc_figures import ROOT, document


def run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "plugin")}
    return subprocess.run([sys.executable, "-m", "gpu_budget", *args], capture_output=True, text=True, env=env,
                          timeout=60, check=False)


def commands() -> list[str]:
    """The commands `python -m gpu_budget --help` lists, in its order."""
    done = run("--help")
    assert done.returncode == 0, done.stderr
    return re.findall(r"^  ([a-z]+): ", done.stdout, re.MULTILINE)


def test_readme_lists_each_command_and_each_answers_help():
    readme = document("README.md")
    commands_section = readme[readme.index("## Commands"):readme.index("## Documentation")]
    listed = re.findall(r"^- `([a-z]+)[ `]", commands_section, re.MULTILINE)
    assert listed == commands()
    for name in listed:
        done = run(name, "--help")
        assert done.returncode == 0 and f"usage: python -m gpu_budget {name}" in done.stdout, (name, done.stderr)


def test_layout_names_the_same_commands():
    assert f"`python -m gpu_budget {'|'.join(commands())}`" in document("docs/layout.md")
