"""An environment's overlay carried as wheels, for a host without a package index (GPU_BUDGET_WHEELHOUSE).

Where no index can be reached, a case's environment can be made only from
wheels brought to the host, and a resolution there would need the whole
closure of the requirements as wheels, the parts the case never imports too
(LLaMA-Factory 0.9.3 requires gradio, 52 MiB, which its training never
imports). So the folder is taken as the resolution, made where an index was
reached (benchmarks/llamafactory_wheels.sh): the overlay is its wheels whose
version the running environment lacks, installed with --no-deps from that
folder alone. Nothing is resolved on the host; what is checked instead: one
version per package, every requirement met by the folder or the running
environment (else EnvironmentFailed, kind "wheels", naming the requirement and
what the folder holds; instant, so not remembered), and each requirement of
the carried wheels that neither meets (an asked extra's too) is named among
the record's conflicts (`unmet`), so the report says what was left out. The failures of one folder's
installs are remembered apart from the index's (the tool's label names the
folder and a digest of what it holds).
"""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from gpu_budget.declare.environment import canonical
from gpu_budget.isolate.env_failures import EnvironmentFailed

VARIABLE = "GPU_BUDGET_WHEELHOUSE"
KIND = "wheels"  # a failure of the folder's check: instant, so not remembered across sessions (env_failures)


@dataclass(frozen=True)
class Wheelhouse:
    """A folder of wheels: canonical name -> (version, wheel path), one version per package."""

    folder: Path
    wheels: Mapping[str, tuple[str, Path]]

    @classmethod
    def read(cls, folder: str | Path) -> Wheelhouse:
        """The folder's wheels; EnvironmentFailed where it is missing, holds none, or holds two versions of one."""
        where = Path(folder)
        if not where.is_dir():
            raise EnvironmentFailed(KIND, f"{VARIABLE}={str(folder)!r} is not a folder")
        wheels: dict[str, tuple[str, Path]] = {}
        for path in sorted(where.glob("*.whl")):
            try:
                name, version, _, _ = parse_wheel_filename(path.name)
            except InvalidWheelFilename as exc:
                raise EnvironmentFailed(KIND, f"{VARIABLE}: {path.name!r} is not a wheel's name: {exc}") from None
            if name in wheels and wheels[name][0] != str(version):
                raise EnvironmentFailed(KIND, f"{VARIABLE}={str(folder)!r} holds {name} {wheels[name][0]} and "
                                              f"{version}: keep one version of each package")
            wheels[name] = (str(version), path)
        if not wheels:
            raise EnvironmentFailed(KIND, f"{VARIABLE}={str(folder)!r} holds no wheel")
        return cls(where.resolve(), wheels)

    @property
    def digest(self) -> str:
        """What the folder holds, in 12 hex digits (a failure remembered for one holding is not another's)."""
        listing = "\n".join(f"{name}=={version}" for name, (version, _) in sorted(self.wheels.items()))
        return hashlib.sha256(listing.encode()).hexdigest()[:12]

    def overlay(self, requirements: Sequence[str], running: Mapping[str, str]) -> dict[str, str]:
        """The wheels whose version the running environment lacks; EnvironmentFailed naming a requirement that
        neither the folder nor the running environment meets. running: each running distribution's version with its
        local label (running_versions(local=True)), which a requirement may name: "torch==2.13.0+cpu" is met by the
        running 2.13.0+cpu, as pip keeps it."""
        overlay = {name: version for name, (version, _) in sorted(self.wheels.items())
                   if name not in running or _public(running[name]) != _public(version)}
        for line in requirements:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            name = canonical(req.name)
            have = overlay.get(name) or running.get(name)
            if have is None or not req.specifier.contains(have, prereleases=True):
                held = self.wheels.get(name)
                raise EnvironmentFailed(KIND, f"cannot resolve {line} from {VARIABLE}={str(self.folder)!r}: it holds "
                                              f"{f'{name} {held[0]}' if held else f'no wheel of {name}'}, and the "
                                              f"running environment {f'has {running[name]}' if name in running else 'lacks it'}")
        return overlay

    def unmet(self, overlay: Mapping[str, str], running: Mapping[str, str],
              requirements: Sequence[str] = ()) -> tuple[str, ...]:
        """Each requirement of an overlay wheel that neither the overlay nor the running environment meets, as
        "llamafactory 0.9.3 needs gradio<=5.31.0,>=4.38.0 (here none)": its own, and its extras' where one is asked
        for ("gbtiny[fast]" in `requirements`, or by another overlay wheel), as pip would install them."""
        asked = self._extras(overlay, requirements)
        found = []
        for name in overlay:
            for req in self._needs(name, asked.get(name, set())):
                have = overlay.get(canonical(req.name)) or running.get(canonical(req.name))
                if have is None or not req.specifier.contains(have, prereleases=True):
                    found.append(f"{name} {overlay[name]} needs {req.name}{req.specifier} (here {have or 'none'})")
        return tuple(sorted(found))

    def _extras(self, overlay: Mapping[str, str], requirements: Sequence[str]) -> dict[str, set[str]]:
        """Canonical name -> the extras asked of it, by `requirements` and by the overlay wheels' own requirements
        (what an asked extra requires may ask for another's), to a fixed point."""
        asked: dict[str, set[str]] = {}
        for line in requirements:
            req = Requirement(line)
            asked.setdefault(canonical(req.name), set()).update(canonical(e) for e in req.extras)
        grown = True
        while grown:
            grown = False
            for name in overlay:
                for req in self._needs(name, asked.get(name, set())):
                    extras = {canonical(e) for e in req.extras}
                    if not extras <= asked.setdefault(canonical(req.name), set()):
                        asked[canonical(req.name)] |= extras
                        grown = True
        return asked

    def _needs(self, name: str, extras: set[str]) -> list[Requirement]:
        """The overlay wheel `name`'s requirements that apply here, with `extras` asked of it."""
        needs = []
        for line in _requires(self.wheels[name][1]):
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ("", *sorted(extras))):
                needs.append(req)
        return needs


def _requires(wheel: Path) -> list[str]:
    """A wheel's Requires-Dist lines, read from its METADATA."""
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
        headers = HeaderParser().parsestr(zf.read(meta).decode("utf-8", "replace"))
    return headers.get_all("Requires-Dist") or []


def _public(version: str) -> str:
    try:
        return Version(version).public
    except InvalidVersion:  # a running distribution's own (no wheel's name holds one)
        return version
