"""What a test may cost: its Budget (limits per scale) and the Tolerance a figure may move from its baseline."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from gpu_budget.units import parse_size

SCALES = ("tiny", "real")

SizeGiven = str | int | Mapping[str, str | int] | None  # a marker's ram=/vram=: a size, or one per scale


@dataclass(frozen=True)
class Tolerance:
    """A measurement regresses when measured > baseline * (1 + rel) + abs."""

    rel: float
    abs: int

    def limit(self, baseline: int) -> float:
        return baseline * (1 + self.rel) + self.abs

    def floor(self, baseline: int) -> float:
        return baseline * (1 - self.rel) - self.abs

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
    if size == 0 and what.startswith("ram "):  # a VRAM budget of 0 B holds a run that allocates nothing on the GPU
        raise ValueError(f"{where}: {what}{at} {value!r} is 0 B: every run holds some host RAM, so every run would "
                         "fail it whatever it measured")
    return size
