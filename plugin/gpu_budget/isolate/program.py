"""A command's program in a case's own environment (a sweep's version among them): the environment's, or refused.

The environment's packages reach a command only through the environment's
interpreter. So a program is run from the environment's bin folder where
that folder has it: the running interpreter (sys.executable, or the same
interpreter named by another path in its bin folder: `.venv/bin/python3`),
a bare `python3`, or a console script of a package the environment lays
over. A program that would start another Python (a launcher script of the
running environment, `torchrun` or `accelerate`, whose #! line names the
running interpreter; another interpreter, `/usr/bin/python3`) would run the
running packages at every version and be reported as the environment's: it
is refused (OutsideEnvironment), naming the program and what it runs, except
a launcher of the running interpreter (torchrun, accelerate,
accelerate-launch), which runs as `<environment's python> -m <its module>`:
its console script only calls that module's main(), which `-m` runs too. A
program that starts no Python of its own (a shell script, a binary) is left
as it is: a `python` it starts is found on PATH, where the environment's
bin folder comes first.

Whether a command's own process is a shell (`sh -c ...`, or a script whose #!
line starts one) is read here too: a shell's exit 137 is the SIGKILL of the
process it waited for (command.py).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

INTERPRETER = re.compile(r"^python(\d+(\.\d+)?)?$")
SHELLS = ("sh", "bash", "dash", "zsh", "ksh", "ash")
_MODULE = re.compile(r"^from\s+([\w.]+)\s+import\s", re.MULTILINE)  # a console script's entry point
# launchers whose console script calls main() of a module that runs it under `python -m` too
LAUNCHERS = ("torch.distributed.run", "accelerate.commands.accelerate_cli", "accelerate.commands.launch")


class OutsideEnvironment(ValueError):
    """A command whose program would run another interpreter than the environment's: its versions would not
    take effect there."""


def in_environment(argv: Sequence[str], python: str, lays: str, this: str = sys.executable,
                   path: str | None = None, cwd: str | None = None) -> tuple[str, ...]:
    """`argv` with its program the environment's (`python` is its interpreter; `lays`: what it lays over, for the
    message); OutsideEnvironment where the program would run another interpreter. path: the PATH the command
    sees (default: this process's); cwd: the folder a relative program is found from."""
    program, rest = argv[0], tuple(argv[1:])
    own = Path(python).parent
    if program == this:
        return (python, *rest)
    name = os.path.basename(program)
    found = _located(program, path, cwd)
    if (own / name).exists() and ("/" not in program or (found is not None and _same_dir(found.parent, Path(this).parent))):
        return (str(own / name), *rest)  # found on PATH, or the running interpreter's bin folder named
    runs = _interpreter_of(found, os.pathsep.join(filter(None, [str(own), path]))) if found is not None else None
    if runs is None or _same_dir(runs.parent, own):
        return tuple(argv)
    module = _entry_module(found)
    if runs != found and module in LAUNCHERS and _same_dir(runs.parent, Path(this).parent):
        return (python, "-m", module, *rest)  # the running interpreter's launcher, as the environment's
    why = (f"is the interpreter {runs}" if runs == found
           else f"runs {runs} (its #! line), not the environment's interpreter ({python})")
    raise OutsideEnvironment(f"command {program!r} {why}: {lays} would not take effect there (the case would "
                             f"measure that interpreter's packages instead); start it with sys.executable, which "
                             f"becomes the environment's interpreter{_advice(found)}")


def _located(program: str, path: str | None, cwd: str | None) -> Path | None:
    """The file `program` names (a bare name: the first on `path`); None where there is none."""
    if "/" not in program:
        found = shutil.which(program, path=path if path is not None else os.environ.get("PATH"))
        return Path(found) if found else None
    located = Path(cwd or ".") / program
    return located if located.is_file() else None


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _interpreter_of(file: Path, path: str) -> Path | None:
    """The Python `file` starts: itself where it is an interpreter, else the one its #! line names (an `env`
    line's found on `path`, pip's `#!/bin/sh` + `'''exec'` form's); None where it starts none it names."""
    if INTERPRETER.match(file.name):
        return file
    try:
        with open(file, "rb") as fh:
            head = fh.read(1024).decode(errors="replace").splitlines()
    except OSError:
        return None
    if not head or not head[0].startswith("#!"):
        return None
    words = head[0][2:].split()
    if words and os.path.basename(words[0]) == "sh" and len(head) > 1 and head[1].startswith("'''exec'"):
        words = shlex.split(head[1][len("'''exec'"):])  # pip's form for a long interpreter path
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
        found = shutil.which(words[0], path=path) if words else None
        words = [found] if found else []
    if not words or not INTERPRETER.match(os.path.basename(words[0])):
        return None
    return Path(words[0])


def is_shell(argv: Sequence[str], path: str | None = None, cwd: str | None = None) -> bool:
    """Whether a command's own process is a shell: one named (`sh -c ...`), or a script whose #! line starts one
    (`./train.sh` of `#!/bin/bash` or `#!/usr/bin/env bash`); path, cwd: as in_environment's."""
    if not argv:
        return False
    if os.path.basename(argv[0]) in SHELLS:
        return True
    found = _located(argv[0], path, cwd)
    if found is None:
        return False
    try:
        with open(found, "rb") as fh:
            head = fh.readline(1024).decode(errors="replace")
    except OSError:
        return False
    words = head[2:].split() if head.startswith("#!") else []
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w]  # env's options and VAR=value
    return bool(words) and os.path.basename(words[0]) in SHELLS


def _entry_module(file: Path) -> str | None:
    """The module a console script imports its entry point from; None for an interpreter, or where none is named."""
    if INTERPRETER.match(file.name):
        return None
    try:
        found = _MODULE.search(file.read_text(errors="replace")[:4096])
    except OSError:
        return None
    return None if found is None else found.group(1)


def _advice(file: Path) -> str:
    """How to start a console script's entry point with sys.executable, where its text names the module."""
    module = _entry_module(file)
    return "" if module is None else f" ([sys.executable, \"-m\", \"{module}\", ...] runs the module it runs)"
