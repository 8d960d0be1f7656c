"""How a run's setup relates to its baseline entry's (`Setup`): the fields that differ, the import floors' difference,
and what judge/fingerprint.py's policy made of them.

Built by judge/fingerprint.py `between` (the policy lives there); read by the verdict (judge/compare.py), the row and
the report. Drift is said only where numbers move: a field whose only effect is the import floor (the packages
imported, the preload list, the CPU model, the kernel) is named only when the floor moved past the gate's threshold;
below that it is kept in `quiet`, and the shift, measured in every session, is taken off the peak either way.

A JSON row holds the policy, the shift, whether it moved and the quiet differences; the differing fields and their
words are the run's alone (the row says them in `fingerprint_changed`). A row written before the report held
`floor_moved` or `quiet` reads back with None there and writes back without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpu_budget.model.budget import Tolerance
from gpu_budget.model.figures import Fields
from gpu_budget.units import format_size

# One fingerprint field's value: a version, a name, a count, a digest, a command's environment, or unknown (None)
Fact = str | int | float | bool | Mapping[str, str] | None
Fingerprint = Mapping[str, Fact]  # field -> fact: what a baseline entry was recorded under (judge/fingerprint.py)
SetupJson = Mapping[str, str | int | bool | list[str] | None]  # a row's "setup": policy, floor_shift, floor_moved, quiet, vram_compared
FOREIGN = "foreign"  # the policy under which the host RAM peak is not compared (judge/fingerprint.py)


@dataclass(frozen=True)
class Setup(Fields):
    """The setup's differences from the baseline's: `diffs` field -> (baseline's, now), the ones shown; `floor_shift`
    now's import floor less the baseline's (bytes; 0 where either is unknown); `described` the row's words for each
    diff; `quiet` the floor-only differences that moved the floor too little to name; `policy` the strictest
    consequence among the diffs (None: none differs); `floor_moved` whether the shift passed the gate's threshold;
    `vram_compared` False where the CUDA caching allocator's config differs, which moves the allocated peak itself."""

    diffs: Mapping[str, tuple[Fact, Fact]] = field(default_factory=dict)
    floor_shift: int = 0
    described: tuple[str, ...] = ()
    quiet: tuple[str, ...] | None = ()
    policy: str | None = None
    floor_moved: bool | None = False
    vram_compared: bool = True

    def ram_tolerance(self, own: Tolerance) -> Tolerance | None:
        """The tolerance the host RAM peak is compared at, or None: not comparable across these setups."""
        return None if self.policy == FOREIGN else own

    def vram_tolerance(self, own: Tolerance) -> Tolerance | None:
        """The tolerance the allocated VRAM peak is compared at, or None: not comparable across these setups."""
        return own if self.vram_compared else None

    def note(self) -> str | None:
        """What the row says of the setup, when it differs from the baseline's."""
        parts = []
        if self.diffs:
            parts.append("setup differs from the baseline's: " + "; ".join(self.described))
        if self.floor_moved:  # under FOREIGN host RAM is not compared: nothing is taken off it
            taken = "" if self.policy == FOREIGN else " (taken off the host RAM peak)"
            parts.append(f"import floor {_signed(self.floor_shift)}{taken}")
        uncompared = [what for what, compared in (("host RAM", self.policy != FOREIGN),
                                                  ("allocated VRAM", self.vram_compared)) if not compared]
        if uncompared:
            parts.append(f"{' and '.join(uncompared)} not compared across these setups: record a baseline for this "
                         "setup (--gpu-budget-update)")
        return "; ".join(parts) or None

    def to_json(self) -> dict[str, str | int | bool | list[str] | None]:
        """The row's part: {policy, floor_shift, floor_moved?, quiet?} (left out where a row read back lacked them)."""
        out: dict[str, str | int | bool | list[str] | None] = {"policy": self.policy, "floor_shift": self.floor_shift}
        if self.floor_moved is not None:
            out["floor_moved"] = self.floor_moved
        if self.quiet is not None:
            out["quiet"] = list(self.quiet)
        if not self.vram_compared:  # written only where it holds: a row written before reads back unchanged
            out["vram_compared"] = False
        return out

    @classmethod
    def from_json(cls, data: SetupJson) -> Setup:
        quiet = data.get("quiet")
        return cls(floor_shift=data.get("floor_shift", 0), quiet=None if quiet is None else tuple(quiet),
                   policy=data.get("policy"), floor_moved=data.get("floor_moved"),
                   vram_compared=data.get("vram_compared", True) is not False)


def _signed(nbytes: int) -> str:
    return ("+" if nbytes >= 0 else "-") + format_size(abs(nbytes))
