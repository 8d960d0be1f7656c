"""What a test may cost: its Budget (limits per scale) and the Tolerance a figure may move from its baseline."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from gpu_budget.units import parse_size

SCALES = ("tiny", "real")

SizeGiven = str | int | Mapping[str, str | int] | None  # a marker's ram=/vram=: a size, or one per scale


@dataclass(frozen=True)
class Tolerance:
    """A measurement regresses when measured > baseline * (1 + rel) + abs, improves when measured < baseline * (1 - rel)
    - abs: both worked out on `rel` as the decimal it was written as (`_share`), so a figure exactly at its limit is
    within it (float's 1.005 is a little less than 1.005, and put 100 MiB's limit a fraction of a byte below 104.5 MiB)."""

    rel: float
    abs: int

    def limit(self, baseline: int) -> float:
        return float(baseline + self._share(baseline) + self.abs)

    def floor(self, baseline: int) -> float:
        return float(baseline - self._share(baseline) - self.abs)

    def _share(self, baseline: int) -> Fraction | float:
        """baseline * rel, exact for the decimal `rel` reads as (0.005: 1/200) where both are finite."""
        if not (math.isfinite(self.rel) and math.isfinite(baseline)):
            return baseline * self.rel
        return Fraction(baseline) * Fraction(repr(float(self.rel)))

    def to_json(self) -> dict[str, float | int]:
        return {"rel": self.rel, "abs": self.abs}

    @classmethod
    def from_json(cls, data: Mapping[str, float | int]) -> Tolerance:
        return cls(rel=data["rel"], abs=data["abs"])


@dataclass(frozen=True)
class Budget:
    """Limits in bytes for one test at one scale; None means not budgeted."""

    ram: int | None = None
    vram: int | None = None
    imbalance: float | None = None  # a launcher case: its largest rank's RAM tree over its smallest's, at most this

    def to_json(self) -> dict[str, int | None]:
        """As a report row holds it: the RAM and VRAM limits."""
        return {"ram": self.ram, "vram": self.vram}

    @classmethod
    def from_json(cls, data: Mapping[str, int | None] | None) -> Budget:
        return cls() if not data else cls(ram=data.get("ram"), vram=data.get("vram"))

    @classmethod
    def for_scale(cls, scale: str, ram: SizeGiven = None, vram: SizeGiven = None, where: str = "",
                  imbalance: object = None) -> Budget:
        """Read a marker's ram=/vram= (a size, or a {scale: size} mapping) for `scale`, and its imbalance= (a ratio)."""
        if imbalance is not None and (isinstance(imbalance, bool) or not isinstance(imbalance, (int, float))
                                      or not 1 <= imbalance < math.inf):
            raise ValueError(f"{where}: imbalance={imbalance!r}: expected a ratio >= 1 (the largest rank's peak over "
                             "the smallest's), and finite: no run could break an infinite one")
        return cls(ram=_pick(ram, scale, "ram", where), vram=_pick(vram, scale, "vram", where),
                   imbalance=None if imbalance is None else float(imbalance))


def sizes_given(value: SizeGiven, what: str, where: str) -> dict[str | None, int | None]:
    """A marker's ram=/vram= (`what`: "ram budget", "vram budget in cuda=") read at every scale it names ({None: size}
    for one size at all scales): a typo in a scale this session does not run fails all the same, naming the scale, as
    origin= and steps= do."""
    if not isinstance(value, Mapping):
        return {None: _size(value, what, where)}
    unknown = set(value) - set(SCALES)
    if unknown:
        raise ValueError(f"{where}: {what} names unknown scale(s) {sorted(unknown)} (known: {SCALES})")
    return {scale: _size(size, what, where, scale) for scale, size in value.items()}


def _pick(value: SizeGiven, scale: str, what: str, where: str) -> int | None:
    sizes = sizes_given(value, f"{what} budget", where)
    return sizes[None] if None in sizes else sizes.get(scale)


def _size(value: str | int | None, what: str, where: str, scale: str | None = None) -> int | None:
    if value is None:
        return None
    at = f" at scale {scale!r}" if scale is not None else ""
    try:
        size = parse_size(value)
    except ValueError as exc:
        raise ValueError(f"{where}: bad {what}{at}: {exc}") from None
    why = NEVER_NOTHING.get(what.split()[0])  # "ram budget in cuda=" -> "ram"
    return size if why is None else not_zero(size, f"{where}: {what}{at} {value!r}", why)


# The sizes 0 B never fits, and why: one rule, one message (not_zero()) for each. A VRAM budget of 0 B is not one of
# them: a run that allocates nothing on the GPU meets it, and so is held to it.
NEVER_NOTHING = {"ram": "every run holds some host RAM, so every run would fail it whatever it measured"}


def not_zero(size: int, said: str, why: str) -> int:
    """`size`, read from what `said` names, where it cannot be nothing: 0 B (no bytes in any unit, or a fraction of
    a byte) is a slip, refused naming it and `why` it cannot be met, never a limit every run breaks."""
    if size == 0:
        raise ValueError(f"{said} is 0 B: {why}")
    return size
