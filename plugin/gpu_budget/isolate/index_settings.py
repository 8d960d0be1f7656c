"""The package index settings an installer reads, so a remembered failure (env_failures.py), a resolution and a
made environment (environment.py) are kept per index.

A requirement that one index lacks (a private mirror without the version)
may be on another: a failure remembered under one index says nothing of the
next, so the settings are part of a remembered failure's key and named in
its message. They are the environment variables that point pip or uv at an
index or a folder of wheels or a constraint file (keyed by what that file
holds, as are pip's constraint files named in its configuration), and a
digest of each configuration file the tool reads (its index lines may be
there); uv is given pip's variables, and the index settings and constraint
files of pip's configuration files (pip_config.py), as its own
where none of its own replaces them (`from_pip`). So do the settings that let a
resolution take a pre-release or pick other versions (PIP_PRE, UV_PRERELEASE,
UV_RESOLUTION, UV_OVERRIDE and UV_EXCLUDE by what their files hold): a
resolution kept without one is not another's with it. A URL's credentials
(`user:password@`) are never kept: they are written `***@`, and count by a
slow salted digest (one entry, "credentials (pbkdf2 DIGEST)", which no
message names), so a changed password alone is a new key: a failure
remembered under a wrong password (a 401) is tried again under the next.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gpu_budget.declare.params import Json
from gpu_budget.isolate import pip_config
from gpu_budget.isolate.pip_config import Setting

VARIABLES = {
    "pip": ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_TRUSTED_HOST",
            "PIP_CONFIG_FILE", "PIP_CONSTRAINT", "PIP_PRE"),
    "uv": ("UV_DEFAULT_INDEX", "UV_INDEX", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS", "UV_NO_INDEX",
           "UV_OFFLINE", "UV_INDEX_STRATEGY", "UV_INSECURE_HOST", "UV_CONFIG_FILE", "UV_NO_CONFIG", "UV_CONSTRAINT",
           "UV_PRERELEASE", "UV_RESOLUTION", "UV_OVERRIDE", "UV_EXCLUDE"),
}
# pip's settings uv is given as its own where the user set no uv counterpart (uv reads none of pip's): pip's name ->
# uv's, the uv names that replace it, and how uv separates a list's items
FOR_UV = {
    "PIP_INDEX_URL": ("UV_INDEX_URL", ("UV_INDEX_URL", "UV_DEFAULT_INDEX"), None),
    "PIP_EXTRA_INDEX_URL": ("UV_EXTRA_INDEX_URL", ("UV_EXTRA_INDEX_URL",), " "),
    "PIP_FIND_LINKS": ("UV_FIND_LINKS", ("UV_FIND_LINKS",), ","),
    "PIP_NO_INDEX": ("UV_NO_INDEX", ("UV_NO_INDEX",), None),
    "PIP_TRUSTED_HOST": ("UV_INSECURE_HOST", ("UV_INSECURE_HOST",), " "),
    "PIP_CONSTRAINT": ("UV_CONSTRAINT", ("UV_CONSTRAINT",), " "),
    "PIP_PRE": ("UV_PRERELEASE", ("UV_PRERELEASE",), None),  # a pre-release taken where it is the best match
}
# the settings that name folders of wheels, and how each separates its items (None: whitespace)
_LINKS = {"PIP_FIND_LINKS": None, "UV_FIND_LINKS": ","}
# the settings that name constraint (override, exclude) files, whitespace-separated: what a file holds is what the
# resolution reads
_CONSTRAINTS = ("PIP_CONSTRAINT", "UV_CONSTRAINT", "UV_OVERRIDE", "UV_EXCLUDE")
# uv's index strategy that reads every index alike, as pip does (uv's default reads the first holding a package)
BEST_MATCH = "unsafe-best-match"
_TRUE = ("1", "true", "yes", "on")
_SWITCHES = {"PIP_NO_INDEX": "1", "PIP_PRE": "allow"}  # pip's switches, as uv spells them turned on
_INDEXES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")
_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]+@")
CREDENTIALS = "credentials (pbkdf2 "  # the entry that keys the URLs' credentials by their digest alone


def redact(value: str) -> str:
    """`value` with every URL's user and password written `***` ("https://u:p@host/simple" -> "https://***@host/simple")."""
    return _CREDENTIALS.sub("***@", value)


def _config_files(tool: str) -> list[Path]:
    """The configuration files `tool` reads on Linux, where they exist (pip's global, user and site ones; uv's
    system and user ones; each tool's file named by its variable)."""
    home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    dirs = [Path(d) for d in (os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(os.pathsep) if d]
    if tool == "pip":
        paths = [*(d / "pip" / "pip.conf" for d in dirs), Path("/etc/pip.conf"), Path.home() / ".pip" / "pip.conf",
                 home / "pip" / "pip.conf", Path(sys.prefix) / "pip.conf", os.environ.get("PIP_CONFIG_FILE")]
    else:
        paths = [*(d / "uv" / "uv.toml" for d in dirs), Path("/etc/uv/uv.toml"), home / "uv" / "uv.toml",
                 os.environ.get("UV_CONFIG_FILE"), _uv_project_config()]
    return [Path(p) for p in dict.fromkeys(paths) if p and Path(p).is_file()]


def _uv_project_config() -> Path | None:
    """The project-level file uv reads from this process's folder: the nearest uv.toml, or pyproject.toml holding a
    [tool.uv] table, in it or a folder above (None where UV_CONFIG_FILE replaces it or UV_NO_CONFIG turns it off)."""
    if os.environ.get("UV_CONFIG_FILE") or os.environ.get("UV_NO_CONFIG"):
        return None
    for folder in (Path.cwd(), *Path.cwd().parents):
        if (folder / "uv.toml").is_file():
            return folder / "uv.toml"
        if _has_uv_table(folder / "pyproject.toml"):
            return folder / "pyproject.toml"
    return None


def _has_uv_table(path: Path) -> bool:
    """Whether a pyproject.toml holds [tool.uv] (uv passes over one without it)."""
    try:
        return _uv_table(path.read_text()) is not None
    except OSError:
        return False


def _uv_table(text: str) -> str | None:
    """A pyproject's [tool.uv] table as text to digest (its other tables change no index), None where it has none;
    without tomllib (Python 3.10) the whole file, where a line opens a tool.uv table."""
    try:
        import tomllib
    except ImportError:
        return text if re.search(r"^\s*\[\[?\s*tool\.uv\b", text, re.MULTILINE) else None
    try:
        table = _Pyproject.from_json(tomllib.loads(text)).uv
    except ValueError:
        return None
    return None if table is None else json.dumps(table, sort_keys=True, default=str)


@dataclass(frozen=True)
class _Pyproject:
    """What uv reads of a pyproject.toml: its [tool.uv] table (None: it has none)."""

    uv: object

    @classmethod
    def from_json(cls, data: Mapping[str, Json]) -> _Pyproject:
        tool = data.get("tool")
        return cls(tool.get("uv") if isinstance(tool, dict) else None)


def _digest(path: Path) -> str:
    """sha256 of what the tool reads in `path`: a pyproject's [tool.uv] table, any other file whole."""
    data = path.read_bytes()
    if path.name == "pyproject.toml":
        data = (_uv_table(data.decode(errors="replace")) or "").encode()
    return hashlib.sha256(data).hexdigest()[:12]


def from_pip(environ: Mapping[str, str], config: Mapping[str, Setting] | None = None) -> dict[str, str]:
    """uv's settings for the pip settings set in `environ`, or else in pip's configuration (`config`: pip_config.py),
    whose uv counterpart is not (PIP_INDEX_URL as UV_INDEX_URL, PIP_FIND_LINKS as UV_FIND_LINKS, ...): uv reads
    none of pip's, so a mirror or wheel folder given to pip would be passed over and the registry read instead."""
    found = {}
    given = {**{name: setting.value for name, setting in (config or {}).items()},
             **{name: environ[name] for name in FOR_UV if name in environ}}  # pip's variable wins over its file
    # pip's no-index passes over every index URL; uv's reads one given all the same: none is handed to it then
    no_index = any(value.strip().lower() in _TRUE for value in (given.get("PIP_NO_INDEX", ""),
                                                                  environ.get("UV_NO_INDEX", "")))
    for pip_name, (uv_name, replaced_by, separator) in FOR_UV.items():
        value = given.get(pip_name, "").strip()
        if not value or any(environ.get(name) for name in replaced_by) or (no_index and pip_name in _INDEXES):
            continue
        if pip_name in _SWITCHES:
            if value.lower() in _TRUE:
                found[uv_name] = _SWITCHES[pip_name]
        else:
            found[uv_name] = separator.join(value.split()) if separator else value
    if "UV_EXTRA_INDEX_URL" in found and not environ.get("UV_INDEX_STRATEGY"):
        found["UV_INDEX_STRATEGY"] = BEST_MATCH  # pip takes the best release of all its indexes; uv, the first's
    return found


def _pip_config(keep: Path | None = None) -> dict[str, Setting]:
    """The index settings pip's configuration files hold (read by pip itself: pip_config.py; `keep`: where what it
    said is kept for the next session)."""
    return pip_config.settings(_config_files("pip"), keep)


# pip's settings that say where an install goes, or make a resolution drop what is installed or what a requirement
# needs: the user's, for their own installs. A case's environment is the gate's to place (pip's --python), resolved
# whole against the running one, so pip runs without them: the variables removed, the switches turned off by a
# variable (which wins over pip's configuration files; a file's target, prefix or root cannot be, and is found by
# what the install left: environment.py)
PIP_PLACES = ("PIP_TARGET", "PIP_PREFIX", "PIP_ROOT")
PIP_OFF = {"PIP_USER": "0", "PIP_IGNORE_INSTALLED": "0", "PIP_UPGRADE": "0", "PIP_NO_DEPS": "0",
           # a guard against installing into a Python that is no venv: the resolve installs nothing in the running one
           # (a conda environment, a system Python), and the install goes to the gate's own venv
           "PIP_REQUIRE_VIRTUALENV": "0"}


def tool_environ(tool: str) -> dict[str, str]:
    """The environment `tool` runs with: this process's, and for uv pip's index settings as uv's own (from_pip), without
    pip's install places and switches (PIP_PLACES, PIP_OFF)."""
    environ = {name: value for name, value in os.environ.items() if name not in PIP_PLACES}
    return {**environ, **PIP_OFF, **(from_pip(os.environ, _pip_config()) if tool == "uv" else {})}


def index_settings(tool: str, keep: Path | None = None) -> tuple[str, ...]:
    """What points `tool` ("uv" or "pip") at an index or holds its resolution to versions (a constraint file, by
    its content), each as "NAME=value" (credentials redacted; "(from PIP_...)" where uv is given pip's) or "config
    PATH (sha256 DIGEST)"; empty where the tool reads its default index. `keep`: pip_config.settings's."""
    config = _pip_config(keep)
    environ = {**os.environ, **(from_pip(os.environ, config) if tool == "uv" else {})}
    given = [name for name in VARIABLES.get(tool, ()) if environ.get(name)]
    mapped = {uv_name: pip_name if pip_name in os.environ else f"pip config {config[pip_name].where}"
              for pip_name, (uv_name, _, _) in FOR_UV.items()
              if tool == "uv" and uv_name not in os.environ and (pip_name in os.environ or pip_name in config)}
    if "UV_INDEX_STRATEGY" not in os.environ:
        mapped["UV_INDEX_STRATEGY"] = "pip, which reads its indexes alike"
    found = [f"{name}={redact(environ[name])}" + (f" (from {mapped[name]})" if name in mapped else "")
             + _read_as(name, environ[name]) for name in given]
    secrets = [f"{name}={secret}" for name in given for secret in _CREDENTIALS.findall(environ[name])]
    if secrets:
        found.append(f"{CREDENTIALS}{_credentials_digest(secrets)})")
    if tool == "pip":  # the file's digest keys the setting, not what it names as read from here (a relative folder)
        found += [f"pip config {setting.where}={redact(setting.value)}{read}" for name, setting in config.items()
                  if name not in os.environ and (read := _read_as(name, setting.value))]
    for path in _config_files(tool):
        try:
            digest = _digest(path)
        except OSError:
            continue
        found.append(f"config {path} (sha256 {digest})")
    return tuple(found)


def _read_as(name: str, value: str) -> str:
    """" (read as /abs/wheels)" for a wheel-folder setting's relative paths, which the tool reads from its working
    folder (this process's): "wheels" in two projects is two folders, so the key names the one read here; for a
    constraint setting, each file as read from here and its content's digest (_constrained)."""
    if name in _CONSTRAINTS:
        return _constrained(value)
    if name not in _LINKS:
        return ""
    items = [item.strip() for item in value.split(_LINKS[name])]
    folders = [os.path.realpath(item) for item in items if item and "://" not in item and not os.path.isabs(item)]
    return f" (read as {' '.join(folders)})" if folders else ""


def _constrained(value: str) -> str:
    """" (read as /abs/c.txt sha256 DIGEST)" for each constraint file a setting names ("missing" where none is
    there): the same name with other pins in it is another resolution. A URL is named as it is."""
    read = []
    for item in value.split():
        if "://" in item:
            continue
        path = os.path.realpath(item)
        try:
            read.append(f"{path} sha256 {hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]}")
        except OSError:
            read.append(f"{path} missing")
    return f" (read as {', '.join(read)})" if read else ""


def _credentials_digest(secrets: list[str]) -> str:
    """A digest of the URLs' credentials that tells one password from another, slow to try passwords against (a
    cache folder that holds it may be shared): PBKDF2-SHA256, a fixed salt, 12 hex digits."""
    return hashlib.pbkdf2_hmac("sha256", "\n".join(secrets).encode(), b"gpu-budget index credentials",
                               100_000).hex()[:12]


def described(settings: tuple[str, ...]) -> str:
    """The settings as a message names them (the credentials' digest left out: a key's part, not a message's)."""
    shown = [s for s in settings if not s.startswith(CREDENTIALS)]
    return ", ".join(shown) if shown else "the tool's default index"
