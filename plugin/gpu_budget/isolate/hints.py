"""Hints for a command that failed the way a relative path taken from the wrong folder fails, or another Python does.

A command's relative paths resolve against its working folder: the Scenario's
`cwd=`, else the test's own as it measures (multiprocessing starts the measured
child in it): the folder pytest was started in, unless the test moved
(monkeypatch.chdir), which the child cannot tell apart. A test that names its script
`train.py` passes when pytest starts beside it and fails from the project's
root, so the failure says which folder the path was taken from and how to make
it hold from anywhere. A bare `python` is the one PATH finds, which under a
venv that is not activated (`.venv/bin/pytest`) is another interpreter with
other packages: a module it lacks is named as that interpreter's.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from gpu_budget.isolate.program import INTERPRETER

CANT_OPEN = re.compile(r"can't open file '([^']+)': \[Errno 2\]")  # python's words for a script that is not there
NO_MODULE = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")


def not_found(argv: Sequence[str], cwd: str | None) -> str:
    """The hint for a command whose program was not found: a relative path (with a folder in it) named from its working
    folder, or a bare name that is a file there (PATH alone is searched); else ""."""
    program = argv[0] if argv else ""
    if os.sep not in program:  # a bare name is looked up on PATH, not in the working folder: say so where it is there
        where = cwd or os.getcwd()
        if program and os.path.isfile(os.path.join(where, program)):
            return (f"; {program!r} is in the command's working folder, {where}, but a bare name is looked up on PATH "
                    f"alone, as a shell does: give it as {'./' + program!r}")
        return ""
    if os.path.isabs(program):
        return ""
    return _hint(program, cwd)


def cannot_open(argv: Sequence[str], cwd: str | None, stderr: str) -> str:
    """The hint for a command that exited because python could not open its script: "" unless the file python names
    is a relative argument of the command, taken from the working folder."""
    found = CANT_OPEN.search(stderr)
    if found is None:
        return ""
    where = cwd or os.getcwd()
    named = os.path.normpath(found.group(1))
    for arg in argv[1:]:
        if arg and not os.path.isabs(arg) and named in (os.path.normpath(arg), os.path.normpath(os.path.join(where, arg))):
            return _hint(arg, cwd)
    return ""


def other_python(argv: Sequence[str], cwd: str | None, path: str | None, stderr: str, this: str = sys.executable) -> str:
    """The hint for a command that died of a missing module under a Python other than the running one (`path`: the
    PATH the command was started with); else ""."""
    missing = NO_MODULE.search(stderr)
    program = argv[0] if argv else ""
    if missing is None or not INTERPRETER.match(os.path.basename(program)):
        return ""
    found = shutil.which(program, path=path) if os.sep not in program else os.path.join(cwd or os.getcwd(), program)
    if found is None or Path(found).parent.resolve() == Path(this).parent.resolve():
        return ""
    how = " (found on PATH)" if os.sep not in program else ""
    return (f"; {program!r} is {found}{how}, not the interpreter running pytest ({this}), so the module "
            f"{missing.group(1)!r} was looked for in that one's packages: start the command with sys.executable")


def _hint(path: str, cwd: str | None) -> str:
    """'; <path> is not in the command's working folder ...': which folder, why, and the two ways out; for a path
    that starts with ~, that no shell runs the command to expand it."""
    where = cwd or os.getcwd()
    if path == "~" or path.startswith("~" + os.sep) or (path.startswith("~") and os.sep in path):
        return (f"; {path!r} starts with ~, which no shell expands here: the command runs without one, so ~ is a "
                f"folder named '~' in its working folder, {where}; give the path with os.path.expanduser({path!r})")
    whose = "the Scenario's cwd=" if cwd else ("the test's working folder as it measured: where pytest was started, "
                                              "unless the test moved; the Scenario gives no cwd=")
    other = "a cwd= that holds it" if cwd else "cwd="
    return (f"; {path!r} is not in the command's working folder, {where} ({whose}): relative paths in a command resolve "
            f'against it; give an absolute path (str(Path(__file__).parent / "{os.path.basename(path)}")) or {other}')
