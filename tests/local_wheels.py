"""A package index on disk, for environments made without the registry: hand-written wheels of a tiny pure-Python
package in a find-links folder, and the installers told to read that folder alone (no index), so a resolve that
cannot succeed fails in a second and one that can is made in a few."""

from pathlib import Path

import pytest

from benchmarks.local_wheel import write_wheel  # noqa: F401  the tests import it from here


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
