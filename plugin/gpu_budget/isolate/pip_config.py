"""The index settings (and constraint files) pip's configuration files hold, read as pip reads them, so uv can be
given them.

uv reads no pip.conf: a mirror or a wheel folder set there for a host would
be passed over and the registry read instead (index_settings.from_pip hands
them to uv, as it hands pip's variables). pip's own rules pick the files and
their order (PIP_CONFIG_FILE read first and lowest, the user's files left
out where it names one, os.devnull reading none), so pip itself reads them:
`python -m pip config list`, the running interpreter's pip, the one `pip
install` here would be. Without pip there is nothing that reads them as pip
does, and nothing is handed over.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

# pip's option names -> its variables' names (index_settings.FOR_UV maps these to uv's)
OPTIONS = {"index-url": "PIP_INDEX_URL", "extra-index-url": "PIP_EXTRA_INDEX_URL", "find-links": "PIP_FIND_LINKS",
           "no-index": "PIP_NO_INDEX", "trusted-host": "PIP_TRUSTED_HOST", "constraint": "PIP_CONSTRAINT"}
SECTIONS = ("global", "install")  # what `pip install` reads, the later winning
TIMEOUT = 60  # seconds for `pip config list`


@dataclass(frozen=True)
class Setting:
    """One index setting of pip's configuration: its value, and where pip reads it ("global.index-url")."""

    value: str
    where: str


def settings(files: Iterable[Path]) -> dict[str, Setting]:
    """pip's variable name -> the setting its configuration holds in its stead; empty where none of `files` (the
    configuration files found, index_settings._config_files) exists or no pip is here."""
    stamp = tuple(_stamp(path) for path in files)
    if not stamp or importlib.util.find_spec("pip") is None:
        return {}
    return dict(_read(stamp, os.environ.get("PIP_CONFIG_FILE", ""), sys.executable))


def _stamp(path: Path) -> tuple[str, str]:
    try:
        return str(path), hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return str(path), ""


@lru_cache(maxsize=8)
def _read(stamp: tuple[tuple[str, str], ...], config_file: str, python: str) -> tuple[tuple[str, Setting], ...]:
    """What `pip config list` says, once per content of the files (`stamp`): each make() reads it several times."""
    del stamp, config_file  # the cache's key alone: pip reads the files and the variable itself
    try:
        proc = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True,
                              timeout=TIMEOUT, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return tuple(parse(proc.stdout if proc.returncode == 0 else "").items())


def parse(listed: str) -> dict[str, Setting]:
    """pip's variable name -> Setting, from `pip config list` lines ("install.find-links='/wheels'"): the
    [install] section's over [global]'s; its `:env:` lines (pip's variables) left to the caller."""
    found: dict[str, tuple[int, Setting]] = {}
    for line in listed.splitlines():
        where, _, quoted = line.partition("=")
        section, _, option = where.partition(".")
        if option not in OPTIONS or section not in SECTIONS:
            continue
        try:
            value = ast.literal_eval(quoted)
        except (ValueError, SyntaxError):
            continue
        rank = SECTIONS.index(section)
        if isinstance(value, str) and value.strip() and rank >= found.get(OPTIONS[option], (-1, None))[0]:
            found[OPTIONS[option]] = (rank, Setting(value.strip(), where))
    return {name: setting for name, (_, setting) in found.items()}
