"""What pip said of its configuration (pip_config.py), kept for the next session and never read stale.

pip takes about half a second to say it, so the reading is kept (under
`keep`, the environments folder: pip-config/KEY.json) with the files pip
looks for, as `pip config debug` lists them, found or not, each by its
content's digest; KEY is what picks those files: the interpreter, pip's
version and place, the user, and the PIP_, HOME and XDG_CONFIG variables. A
kept reading is used only while each of those files holds what it held (one
made, edited or removed since is read again).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from gpu_budget.declare.params import Json

KEPT = "pip-config"  # the folder under `keep` the readings are kept in, one file per key


def digest(path: str) -> str | None:
    """sha256 of a file's content; None where it is absent (or unreadable: pip reads nothing of it either)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


@dataclass(frozen=True)
class Reading:
    """What `pip config list` said (`listed`), and each file pip looked for then with its digest (None: absent)."""

    files: tuple[tuple[str, str | None], ...]
    listed: str

    @classmethod
    def made(cls, looked_at: Iterable[str], listed: str) -> Reading:
        return cls(tuple((path, digest(path)) for path in looked_at), listed)

    def fresh(self) -> bool:
        """Whether each file pip looked for holds what it held (absent where it was)."""
        return all(digest(path) == held for path, held in self.files)

    def to_json(self) -> dict[str, Json]:
        return {"files": [list(f) for f in self.files], "listed": self.listed}

    @classmethod
    def from_json(cls, data: Mapping[str, Json]) -> Reading:
        files, listed = data.get("files"), data.get("listed")
        if not isinstance(files, list) or not isinstance(listed, str) or not all(
                isinstance(f, list) and len(f) == 2 and isinstance(f[0], str) and isinstance(f[1], (str, type(None)))
                for f in files):
            raise ValueError("not a kept reading of pip's configuration")
        return cls(tuple((f[0], f[1]) for f in files), listed)


def key() -> str:
    """What picks the files pip reads and how it reads them: the interpreter, pip's version and place, the user, the
    variables."""
    spec = importlib.util.find_spec("pip")
    picks = {name: value for name, value in os.environ.items()
             if name.startswith("PIP_") or name in ("HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS")}
    return hashlib.sha256(json.dumps([sys.executable, sys.prefix, metadata.version("pip"), spec and spec.origin,
                                      os.getuid(), sorted(picks.items())]).encode()).hexdigest()[:16]


def kept(keep: Path | None, name: str) -> Reading | None:
    """The reading kept under `name` in `keep`; None where there is none (or it cannot be read)."""
    if keep is None:
        return None
    try:
        return Reading.from_json(json.loads((keep / KEPT / f"{name}.json").read_text()))
    except (OSError, ValueError, AttributeError):
        return None


def keep(folder: Path | None, name: str, reading: Reading) -> None:
    """Write the reading for the next session (atomically); a folder that cannot be written keeps none."""
    if folder is None:
        return
    path = folder / KEPT / f"{name}.json"
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp-{os.getpid()}")
        tmp.write_text(json.dumps(reading.to_json()) + "\n")
        os.replace(tmp, path)
