"""A hand-written wheel of a tiny pure-Python package in no registry: an environment made from it needs no index.

The tests' package index on disk (tests/local_wheels.py) and benchmarks/session_endings.py (an environment's helper
ended early) both write theirs here.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

PACKAGE = "gbtiny"  # in no registry the tests read, and not installed


def write_wheel(folder: Path, version: str, name: str = PACKAGE, requires: tuple[str, ...] = ()) -> Path:
    """A py3-none-any wheel of `name` at `version` in `folder`: one module that says its version (and `requires`, its
    Requires-Dist lines)."""
    folder.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    needs = "".join(f"Requires-Dist: {line}\n" for line in requires)
    files = {f"{name}/__init__.py": f"__version__ = {version!r}\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{needs}",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{path},sha256={_digest(text)},{len(text.encode())}" for path, text in files.items()]
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return wheel


def _digest(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
