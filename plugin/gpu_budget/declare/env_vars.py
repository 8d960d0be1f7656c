"""The environment variables a command scenario or a fix sets, as the text a process reads.

A number or a path is written as its text. None, a bool or a container has
no one text a program expects (None would reach it as "None", True as
"True"), so it is refused at declaration, naming the variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def env_text(env: Mapping[object, object], where: str) -> dict[str, str]:
    """`env` with each value as text; ValueError naming the variable where a value is no string, number or path."""
    out: dict[str, str] = {}
    for key, value in dict(env).items():
        if isinstance(value, bool) or not isinstance(value, str | int | float | os.PathLike):
            said = (f"{where}: env[{str(key)!r}]={value!r}: expected a string (a number or a path is written as its "
                    "text); an environment variable holds text")
            raise ValueError(said)  # noqa: TRY004  a declaration's bad value: ValueError, as for every Scenario field
        out[str(key)] = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    return out
