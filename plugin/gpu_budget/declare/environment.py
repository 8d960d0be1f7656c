"""The environment a case declares it runs in: requirements laid over the running environment.

Plain data, checked when it is built: a requirement that is not a valid
PEP 508 line, or a requirements file that cannot be read, is an error naming
it at collection, not a failure deep in a resolver. The gate makes the
environment (isolate/environment.py); whatever the requirements leave open
comes from the running environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from gpu_budget.declare.refused import refusal

__tracebackhide__ = refusal  # a refused declaration in a test fails at the test's line (refused.py)


def canonical(name: str) -> str:
    """A distribution's name as the registry compares it (PEP 503): 'Huggingface_Hub' -> 'huggingface-hub'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_requirement(text: str, where: str = "") -> Requirement:
    """A PEP 508 requirement naming released versions, or a ValueError naming the line (a direct reference, `NAME @
    URL`, among them: an environment installs `NAME==VERSION` from an index, so it could not honour one)."""
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise ValueError(f"{where}requirement {text!r} is not a valid requirement (PEP 508): {exc}") from None
    if req.url:
        raise ValueError(f"{where}requirement {text!r} is a direct reference (a URL): an environment installs released "
                         "versions from an index or GPU_BUDGET_WHEELHOUSE; give NAME==VERSION (a wheel of your own: "
                         "put it in a wheelhouse)")
    return req


_COMMENT = re.compile(r"(^|\s)#.*$")  # pip's: a '#' at the start or after whitespace (a tab too) opens a comment
_INCLUDE = re.compile(r"^(?:-r\s*|--requirement(?:\s+|\s*=\s*))(?P<path>\S.*)$")
_OPTION = re.compile(r"\s(--[a-z][a-z-]*)")  # a per-requirement option after the requirement (--hash=sha256:...)


def _file_lines(path: Path, where: str, seen: frozenset[Path] = frozenset()) -> tuple[str, ...]:
    """The requirement lines of a requirements file, read as pip reads one: comments and blanks dropped, a line
    ending in a backslash joined to the next, `-r FILE` included (relative to this file; a cycle read once); other
    options (-c, -e, index options) refused: an environment could not honour them as pip would."""
    try:
        text = path.read_text()
    except OSError as exc:
        looked = "" if path.is_absolute() else f" ({path.absolute()}, relative to the working folder)"
        raise ValueError(f"{where}requirements file {str(path)!r}{looked} cannot be read: {exc.strerror or exc}") from None
    lines: list[str] = []
    seen = seen | {path.resolve()}
    for line in _logical_lines(text):
        include = _INCLUDE.match(line)
        if include:
            other = path.parent / include.group("path").strip()
            if other.resolve() not in seen:
                lines.extend(_file_lines(other, f"{where}requirements file {str(path)!r}: -r: ", seen))
            continue
        if line.startswith("-"):
            raise ValueError(f"{where}requirements file {str(path)!r}: {line!r}: only requirement lines and -r "
                             "includes are read (no -c, -e or index options)")
        option = _OPTION.search(line)
        if option:
            hashes = ("an environment cannot check hashes (it installs NAME==VERSION from the index or wheelhouse); write "
                      "the file without them (a lock made without --generate-hashes)") if option.group(1) == "--hash" \
                else "an environment could not honour it as pip would; write the line without it"
            raise ValueError(f"{where}requirements file {str(path)!r}: {line.split()[0]!r} has pip's per-requirement "
                             f"option {option.group(1)}: {hashes}")
        parse_requirement(line, f"{where}requirements file {str(path)!r}: ")
        lines.append(line)
    return tuple(dict.fromkeys(lines))


def _logical_lines(text: str) -> list[str]:
    """The file's lines with comments cut, continuations (a trailing backslash) joined, blanks dropped."""
    out: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = _COMMENT.sub("", raw).strip()
        if line.endswith("\\"):
            pending = f"{pending} {line[:-1].strip()}".strip()
            continue
        line = f"{pending} {line}".strip()
        pending = ""
        if line:
            out.append(line)
    return [*out, pending] if pending else out


def _texts(name: str, value: object) -> tuple[str, ...]:
    """requirements= (strings) or files= (strings or paths) as a tuple of strings; anything else a TypeError naming it
    (str() would make a requirement of 5, "5", and read bytes as their numbers)."""
    if isinstance(value, (str, bytes, Path)) or not isinstance(value, Sequence):
        raise TypeError(f"Environment({name}={value!r}): expected a list of strings")
    kinds, said = (str, "string") if name == "requirements" else ((str, os.PathLike), "string or path")
    for item in value:
        if not isinstance(item, kinds) or isinstance(item, bytes):
            raise TypeError(f"Environment({name}={value!r}): {item!r} is no {said}: expected a list of strings")
    return tuple(os.fspath(v) for v in value)


@dataclass(frozen=True)
class Environment:
    """Requirements a case runs with, laid over the running environment (docs/declaring.md, "Its own environment").

    requirements: PEP 508 lines ("transformers==5.17.0", "peft<0.19").
    files:        requirements files (requirement lines and `-r` includes, read as pip reads them), read when the
                  Environment is built; a relative path is taken from the folder pytest is started in.
    """

    requirements: tuple[str, ...] = ()
    files: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("requirements", "files"):
            object.__setattr__(self, name, _texts(name, getattr(self, name)))
        for text in self.requirements:
            parse_requirement(text, "Environment: ")
        for file in self.files:
            _file_lines(Path(file), "Environment: ")
        if not self.requirements and not self.files:
            raise ValueError("Environment(): give requirements=[...] or files=[...] (an empty one is the running "
                             "environment: leave environment= out)")

    @property
    def lines(self) -> tuple[str, ...]:
        """Every requirement, the files' read now (a file edited since collection is read as it is)."""
        from_files = tuple(line for file in self.files for line in _file_lines(Path(file), "Environment: "))
        return (*self.requirements, *from_files)

    @property
    def names(self) -> tuple[str, ...]:
        """The canonical names of the packages it requires, in order."""
        return tuple(dict.fromkeys(canonical(Requirement(line).name) for line in self.lines))

    def with_requirement(self, line: str) -> Environment:
        """This environment with `line` in place of any requirement of the same package (a sweep's version), the
        extras those asked for kept: what they bring in, the case imports."""
        req = parse_requirement(line)
        name = canonical(req.name)
        replaced = [Requirement(r) for r in self.lines if canonical(Requirement(r).name) == name]
        kept = tuple(r for r in self.lines if canonical(Requirement(r).name) != name)
        extras = req.extras.union(*(r.extras for r in replaced))
        if extras != req.extras:
            req.extras = extras
            line = str(req)
        return Environment(requirements=(*kept, line))

    def to_json(self) -> dict[str, list[str]]:
        return {"requirements": list(self.lines)}
