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

pip takes about half a second to say them: what it said is kept for the next
session, and never read stale (pip_readings.py).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import re
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gpu_budget.isolate import pip_readings

# pip's option names -> its variables' names (index_settings.FOR_UV maps these to uv's)
OPTIONS = {"index-url": "PIP_INDEX_URL", "extra-index-url": "PIP_EXTRA_INDEX_URL", "find-links": "PIP_FIND_LINKS",
           "no-index": "PIP_NO_INDEX", "trusted-host": "PIP_TRUSTED_HOST", "constraint": "PIP_CONSTRAINT",
           "pre": "PIP_PRE"}
SECTIONS = ("global", "install")  # what `pip install` reads, the later winning
TIMEOUT = 60  # seconds for `pip config list`
_LOOKED_AT = re.compile(r"^  (\S.*), exists: (True|False)$")  # a file `pip config debug` names, under its kind
_readings: dict[str, pip_readings.Reading] = {}  # this process's, by pip_readings.key()


@dataclass(frozen=True)
class Setting:
    """One index setting of pip's configuration: its value, and where pip reads it ("global.index-url")."""

    value: str
    where: str


def settings(files: Iterable[Path], keep: Path | None = None) -> dict[str, Setting]:
    """pip's variable name -> the setting its configuration holds in its stead; empty where none of `files` (the
    configuration files found, index_settings._config_files) exists or no pip is here. `keep`: a folder where what
    pip said is kept for the next session (pip_readings.py)."""
    if not list(files) or importlib.util.find_spec("pip") is None:
        return {}
    return parse(_listed(keep))


def _listed(keep: Path | None) -> str:
    """What `pip config list` says now: this process's or `keep`'s reading where every file pip read holds what it
    held, else pip asked (and its reading kept)."""
    key = pip_readings.key()
    found = _readings.get(key) or pip_readings.kept(keep, key)
    if found is not None and found.fresh():
        _readings[key] = found
        return found.listed
    listed, debug = _pip("list", "debug")
    looked_at = _looked_at(debug)
    if looked_at is not None:
        _readings[key] = pip_readings.Reading.made(looked_at, listed)
        pip_readings.keep(keep, key, _readings[key])
    return listed


def _pip(*commands: str) -> list[str]:
    """`pip config COMMAND`'s output for each command (the running interpreter's pip), run side by side; empty where
    it failed."""
    said = []
    with contextlib.ExitStack() as running:
        procs = []
        for command in commands:
            try:
                procs.append(running.enter_context(subprocess.Popen(
                    [sys.executable, "-m", "pip", "config", command], stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)))
            except OSError:
                procs.append(None)
        for proc in procs:
            try:
                out = proc.communicate(timeout=TIMEOUT)[0] if proc is not None else ""
            except subprocess.TimeoutExpired:
                proc.kill()
                out = ""
            said.append(out if proc is not None and proc.returncode == 0 else "")
    return said


def _looked_at(debug: str) -> list[str] | None:
    """The files `pip config debug` says pip looks for (found or not); None where its output is not as known."""
    lines = debug.splitlines()
    files = [m.group(1) for m in map(_LOOKED_AT.match, lines) if m]
    return files if files and "global:" in lines and "site:" in lines else None


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
