"""What an extra of this distribution installs, read from its installed metadata.

`pip install 'pytest-gpu-budget[plots]'` asks a package index for a release, which an install from a
clone (README, "Install into your project") is not: the extra's own requirements install the same
whichever way the plugin came in.
"""

from __future__ import annotations

import shlex
from importlib import metadata

DISTRIBUTION = "pytest-gpu-budget"


def requirements(extra: str) -> tuple[str, ...]:
    """The requirements `extra` adds, markers dropped; none where the distribution is not installed (a source tree)."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        declared = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return ()
    found = []
    for line in declared:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        marker = requirement.marker
        if marker is not None and marker.evaluate({"extra": extra}) and not marker.evaluate({"extra": ""}):
            requirement.marker = None
            found.append(str(requirement))
    return tuple(found)


def install_hint(extra: str, module: str) -> str:
    """The command that installs `extra`'s requirements (`module` where the metadata lists none)."""
    return f"pip install {' '.join(shlex.quote(r) for r in requirements(extra) or (module,))} (the {extra} extra of {DISTRIBUTION})"
