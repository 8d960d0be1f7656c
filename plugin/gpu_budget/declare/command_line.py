"""A command scenario's command line at one scale: its fixes' arguments and environment applied, placeholders filled.

Filled when the Scenario is built too, so a placeholder naming no param fails
at collection, not in the measured child.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpu_budget.declare.fixes import Fix
from gpu_budget.declare.params import Json

# What a brace that is no placeholder (a JSON argument, '{"use_reentrant": false}') is told, as str.format reads it
LITERAL_BRACES = "; a literal brace is written twice: '{{' and '}}'"


@dataclass(frozen=True)
class CommandLine:
    """What the measured child starts: the arguments, the working directory (absolute), the environment it sets,
    and how many ranks a launcher starts."""

    argv: tuple[str, ...]
    cwd: str | None
    env: Mapping[str, str]
    ranks: int = 1

    @classmethod
    def filled(cls, command: Sequence[str], cwd: str | None, env: Mapping[str, str], fixes: Sequence[Fix],
               values: Mapping[str, Json], ranks: int, where: str) -> CommandLine:
        """The command with the fixes' arguments appended and their env laid over `env` (a fix changes what it
        names), every "{param}" filled from `values`."""
        argv = [*command, *(a for fix in fixes for a in fix.args)]
        env = {**env, **{k: v for fix in fixes for k, v in fix.env.items()}}
        return cls(tuple(_fill(a, values, where) for a in argv),
                   str(Path(_fill(cwd, values, where)).resolve()) if cwd else None,
                   {k: _fill(v, values, where) for k, v in env.items()}, ranks)

    def to_json(self) -> dict[str, Json]:
        """{"argv", "cwd", "env"}, and "ranks" where a launcher starts more than one."""
        return {"argv": list(self.argv), **({"ranks": self.ranks} if self.ranks > 1 else {}), "cwd": self.cwd,
                "env": dict(self.env)}


def _fill(template: str, values: Mapping[str, Json], where: str) -> str:
    """A command argument with its "{param}" placeholders filled ("{{" is a literal brace)."""
    try:
        return _Filler(template, where).vformat(template, (), values)
    except _NoText as exc:
        raise ValueError(str(exc)) from None
    except KeyError as exc:
        raise ValueError(f"{where}: command placeholder {{{exc.args[0]}}} in {template!r} names no param "
                         f"(params: {', '.join(sorted(k for k in values if k != 'assets'))}; and 'assets')"
                         + _literal_braces(template)) from None
    except (ValueError, IndexError, AttributeError) as exc:
        raise ValueError(f"{where}: bad command placeholder in {template!r}: {exc}{_literal_braces(template)}") from None


class _NoText(Exception):
    """A placeholder's value that has no one text a program expects."""


class _Filler(string.Formatter):
    """str.format_map, refusing a field whose value is None or a container: None would reach the command as the text
    "None", a list as its repr (an env value of either is refused as it is declared: env_vars.py)."""

    def __init__(self, template: str, where: str) -> None:
        self.template, self.where, self.field = template, where, ""

    def get_field(self, field_name, args, kwargs):
        self.field = field_name
        return super().get_field(field_name, args, kwargs)

    def get_value(self, key, args, kwargs):
        if isinstance(key, int):  # "{}" or "{0}": str.format_map's words for it
            raise ValueError("Format string contains positional fields")  # noqa: TRY004  a bad placeholder, as str.format says
        return kwargs[key]

    def format_field(self, value, format_spec):
        if value is None or isinstance(value, list | tuple | dict):
            raise _NoText(f"{self.where}: placeholder {{{self.field}}} in {self.template!r} is {value!r}, which would "
                          f"reach the command as the text {str(value)!r}: give the param a string or a number, or "
                          "leave the argument out where it has none")
        return super().format_field(value, format_spec)


def _literal_braces(template: str) -> str:
    """LITERAL_BRACES where the template's braces are no placeholder (a field that is no name, or braces that do
    not pair), else nothing: a placeholder whose name is wrong was meant as one."""
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(template) if field is not None]
    except ValueError:
        return LITERAL_BRACES
    return LITERAL_BRACES if any(not re.split(r"[.\[]", f, maxsplit=1)[0].isidentifier() for f in fields) else ""


def placeholders(templates: Iterable[str | None]) -> set[str]:
    """The params these templates read: their "{param}" placeholders' names ("{a[0]}" and "{a.b}" read "a"); a
    malformed template reads nothing here (filling it names the fault)."""
    names: set[str] = set()
    for template in templates:
        try:
            parts = [(field, spec) for _, field, spec, _ in string.Formatter().parse(template or "") if field]
        except ValueError:
            continue
        names.update(re.split(r"[.\[]", field, maxsplit=1)[0] for field, _ in parts)
        names.update(placeholders(spec for _, spec in parts))  # "{x:{width}}" reads width too
    return names
