"""The environment variables a command scenario or a fix sets, as the text a process reads.

A number or a path is written as its text. None, a bool or a container has
no one text a program expects (None would reach it as "None", True as
"True"), so it is refused at declaration, naming the variable; so is a name
that is no string (1 would set "1"). So is what no process can be given (a
name that is empty or holds "=", a NUL byte): exec would refuse it only in
the measured child, naming nothing; and a name holding a space (" HF_HOME"),
set where no program reads it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from gpu_budget.declare.refused import refusal

__tracebackhide__ = refusal  # a refused declaration in a test fails at the test's line (refused.py)


def env_text(env: Mapping[object, object], where: str) -> dict[str, str]:
    """`env` with each value as text; ValueError naming the variable where its name is no string, or its value no
    string, number or path."""
    try:
        pairs = dict(env)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: env={env!r}: expected a mapping of variable names to their text "
                         "({'HF_HOME': '/data/hf'})") from None
    out: dict[str, str] = {}
    for name, value in pairs.items():
        if not isinstance(name, str):  # str(1) would set "1", str(b"HOME") "b'HOME'"
            raise ValueError(f"{where}: env names a variable {name!r}: a variable's name is a string")  # noqa: TRY004  a declaration's bad value: ValueError, as for every Scenario field
        if not name or "=" in name or "\0" in name or any(c.isspace() for c in name):  # " HF_HOME": no program reads it
            raise ValueError(f"{where}: env[{name!r}]: a variable's name is not empty and holds no space, '=' or NUL "
                             "byte")
        if isinstance(value, bool) or not isinstance(value, str | int | float | os.PathLike):
            said = (f"{where}: env[{name!r}]={value!r}: expected a string (a number or a path is written as its "
                    "text); an environment variable holds text")
            raise ValueError(said)  # noqa: TRY004  a declaration's bad value: ValueError, as for every Scenario field
        out[name] = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
        if "\0" in out[name]:
            raise ValueError(f"{where}: env[{name!r}]={out[name]!r}: an environment variable's text holds no NUL byte")
    return out
