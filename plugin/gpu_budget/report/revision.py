"""The commit a session measured and whether its work tree was dirty, where git can tell; None where it cannot.

The JSON report records it (`git`), and so does every benchmark section's run
(benchmarks/common.py), so a committed figure names the code that made it and
whether uncommitted edits were in play. Never an error: no git, a folder
outside a repository, a repository without a commit or a git that fails all
read as None. `--no-optional-locks`: reading the status must not take the
index lock from a commit being made beside the session.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

TIMEOUT_S = 30


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "--no-optional-locks", *args], cwd=folder, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)


def state(folder: Path | str) -> dict | None:
    """{"commit": the full HEAD commit, "dirty": whether `git status --porcelain` lists anything}, or None."""
    try:
        head = _git(Path(folder), "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
        if head.returncode != 0 or not head.stdout.strip():
            return None
        status = _git(Path(folder), "status", "--porcelain")
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip()) if status.returncode == 0 else None}
