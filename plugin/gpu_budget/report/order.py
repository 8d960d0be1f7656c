"""The orders the report's tables list rows in: scales as declared (model/budget.py SCALES), versions as released.

One definition each, shared by FINDINGS.md's tables and the terminal's sweep
table, so the two list a sweep's versions alike.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from gpu_budget.model.budget import SCALES


def scale_order(scale: str) -> int:
    """A scale's place in SCALES; an unknown scale after every known one."""
    return SCALES.index(scale) if scale in SCALES else len(SCALES)


def version_order(version: str) -> tuple[int, Version | str]:
    """Released versions in PEP 440 order, then anything that is not one (a path, a commit) by its text."""
    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)
