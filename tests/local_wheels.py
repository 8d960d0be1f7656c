"""A package index on disk, for environments made without the registry: hand-written wheels of a tiny pure-Python
package in a find-links folder, and the installers told to read that folder alone (no index), so a resolve that
cannot succeed fails in a second and one that can is made in a few."""

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest

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


def offline(monkeypatch: pytest.MonkeyPatch, folder: Path) -> Path:
    """pip and uv read `folder` alone (in this process and the ones it starts): no index, no network."""
    folder.mkdir(parents=True, exist_ok=True)
    for key, value in {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(folder), "UV_NO_INDEX": "1",
                       "UV_FIND_LINKS": str(folder), "UV_OFFLINE": "1"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.delenv("UV_EXTRA_INDEX_URL", raising=False)
    return folder


def unsatisfiable(requirement: str, tool: str, versions: str = "1.0") -> str:
    """The key line (isolate/env_failures.key_line) each tool gives for a version no folder holds."""
    if tool == "uv":
        return (f"No solution found when resolving dependencies: Because there is no version of {requirement} and "
                f"you require {requirement}, we can conclude that your requirements are unsatisfiable.")
    return f"Could not find a version that satisfies the requirement {requirement} (from versions: {versions})"
