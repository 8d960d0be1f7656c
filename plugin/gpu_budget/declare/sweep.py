"""A sweep: the releases of a package to measure each case at, read from --gpu-budget-sweep.

Syntax: `PACKAGE==V1,V2[;PACKAGE==V1,...]`, e.g.
`transformers==5.17.0,5.23.0;peft==0.18.1`. Each package is an axis of its
own: every version of it is one environment (`PACKAGE==VERSION` laid over the
case's environment), the other packages left as they run. Axes are not
crossed: two packages of three versions each are six environments, not nine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from gpu_budget.declare.environment import canonical

_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
SYNTAX = "PACKAGE==V1,V2[;PACKAGE==V1,...], e.g. transformers==5.17.0,5.23.0;peft==0.18.1"


@dataclass(frozen=True)
class SweepAxis:
    """One package and the versions each case is measured at."""

    package: str  # canonical name
    versions: tuple[str, ...]

    def requirement(self, version: str) -> str:
        return f"{self.package}=={version}"

    def to_json(self) -> dict[str, str | list[str]]:
        return {"package": self.package, "versions": list(self.versions)}


def parse(text: str) -> tuple[SweepAxis, ...]:
    """The axes of a sweep spec; a ValueError naming the part that is wrong (empty: no sweep). Spaces and line breaks
    around a name, a version or a separator are read past; an empty part or version is a value lost (an unset
    variable), refused."""
    axes: list[SweepAxis] = []
    if not str(text).strip():
        return ()
    for number, part in enumerate((p.strip() for p in str(text).split(";")), 1):
        if not part:
            raise ValueError(f"sweep {text!r}: part {number} is empty (a ';' with no PACKAGE==V1,... on one side): "
                             f"remove the ';', or name what it lost; expected {SYNTAX}")
        name, sep, versions = part.partition("==")
        name = name.strip()
        if not sep or not _NAME.match(name):
            raise ValueError(f"sweep part {part!r}: expected {SYNTAX}")
        listed = [v.strip() for v in versions.split(",")]
        if not all(listed):
            raise ValueError(f"sweep part {part!r}: an empty version (expected {SYNTAX})")
        for version in listed:
            try:
                Version(version)
            except InvalidVersion:
                raise ValueError(f"sweep part {part!r}: {version!r} is not a version") from None
        package = canonical(name)
        if any(axis.package == package for axis in axes):
            raise ValueError(f"sweep part {part!r}: {package} is swept twice; list its versions once")
        once = {Version(v): v for v in reversed(listed)}  # one version spelt twice ("1.0,1.0.0") is measured once
        axes.append(SweepAxis(package, tuple(dict.fromkeys(once[Version(v)] for v in listed))))
    return tuple(axes)
