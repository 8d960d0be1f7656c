"""A file a command writes where its user says (`-o`, `--json`, a plot): refused before the work where it cannot be written,
and written whole or not at all (a temp file beside it, renamed over), so an error never leaves a half-written file
in place of a good one. The temp file is this write's alone (pid and a random token): two sessions writing one
path at once each rename their own whole file, and neither takes the other's half-written one."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from pathlib import Path

SOURCES = (".py", ".pyi")


def unwritable(path: str | Path, others: Iterable[tuple[str, str | Path]] = (), code: bool = True) -> str | None:
    """Why `path` cannot be written as a file (it is a folder, no folder holds it, or it is one of `others`, the files
    the command reads or writes besides, each with what it is: writing it would replace that, or with `code` an existing
    Python source); None where it can be."""
    path = Path(path)
    for what, given in others:
        if os.path.realpath(path) == os.path.realpath(given):
            return f"the same file as {given}, {what}: name another"
    if path.is_dir():
        return "a folder, not a file: name the file to write"
    if code and (why := replaced_source(path)):
        return why
    if not path.parent.is_dir():
        return f"no folder {path.parent}"
    return None


def replaced_source(path: Path) -> str | None:
    """Why a report may not be written to `path`: it is an existing Python source (no command or session writes code:
    a slip of the path, a test module named where the report's path was left out); None where it is not."""
    if path.suffix in SOURCES and path.is_file():
        return "an existing Python source, which no report replaces: name another file"
    return None


def write_whole(path: str | Path, text: str | bytes) -> None:
    """Write `text` (or the bytes of a picture) to `path` through a temp file beside it; an OSError, or a kill, leaves
    nothing changed at `path`."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        if isinstance(text, bytes):
            tmp.write_bytes(text)
        else:
            tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
