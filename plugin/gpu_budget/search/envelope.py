"""The knobs an exploration searches (explore.py): each an (lo, hi) integer range or a list of allowed values.

A bad knob is named when the Envelope is built (in a test module: at collection), never met mid-search.
Importing this module imports neither torch nor hypothesis.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

from gpu_budget.declare.refused import refusal
from gpu_budget.search.exploration import Config, Knob

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__tracebackhide__ = refusal  # a refused declaration in a test fails at the test's line (refused.py)



@dataclass(frozen=True)
class Envelope:
    """The knobs to explore: name -> (lo, hi) inclusive integer range, or a sequence of allowed values.

    monotone: the knobs memory should not fall along (default: all of them but those whose values are names: an
    optimizer's, a precision's, which sorted read alphabetically, no order memory grows along; and flags, whose
    False before True says nothing of memory: checkpointing on uses less). A flag may be named here.
    """

    knobs: Mapping[str, tuple[int, int] | Sequence[Knob]]
    monotone: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        """A bad knob is named here (when a test module builds it), not met as an IndexError mid-search."""
        if self.knobs is not None and not isinstance(self.knobs, Mapping):  # else "'list' object has no attribute"
            raise TypeError(f"knobs={self.knobs!r}: expected a mapping of knob name to its (lo, hi) range or list of "
                            "values")
        if not self.knobs:
            raise ValueError("an envelope needs at least one knob")
        for knob, spec in self.knobs.items():
            _check_spec(knob, spec)
        if self.monotone is not None:
            if isinstance(self.monotone, str | bytes | Mapping) or not isinstance(self.monotone, Iterable):
                raise ValueError(f"monotone={self.monotone!r}: expected a tuple of knob names")
            object.__setattr__(self, "monotone", tuple(self.monotone))  # an iterator is read once
            for knob in self.monotone:
                if knob not in self.knobs:
                    raise ValueError(f"monotone knob {knob!r} is not in the envelope (its knobs: {', '.join(self.knobs)})")
                if self._named(knob):
                    raise ValueError(f"monotone knob {knob!r} has names for values {tuple(self.values(knob))!r}: names "
                                     "have no order memory grows along (sorted, they read alphabetically); leave it "
                                     "out of monotone=")

    def values(self, knob: str) -> Sequence[Knob]:
        """A knob's values in order; a range stays a range: the search goes by index, and (1, 10**9) as a list
        would hold GiBs in the pytest process."""
        spec = self.knobs[knob]
        bounds = _range(spec)
        return range(bounds[0], bounds[1] + 1) if bounds else sorted(spec)

    def strategy(self) -> SearchStrategy[dict[str, Knob]]:
        from hypothesis import strategies as st

        parts = {}
        for knob, spec in self.knobs.items():
            bounds = _range(spec)
            parts[knob] = st.integers(bounds[0], bounds[1]) if bounds else st.sampled_from(sorted(spec))
        return st.fixed_dictionaries(parts)

    def described(self) -> dict[str, dict[str, list[Knob]]]:
        """Each knob as the report writes it: {"range": [lo, hi]} or {"values": [...]}; a bare [lo, hi] read the
        same as a list of two values."""
        return {knob: {"range": list(bounds)} if (bounds := _range(spec)) else {"values": list(spec)}
                for knob, spec in self.knobs.items()}

    def smallest(self) -> dict[str, Knob]:
        return {knob: self.values(knob)[0] for knob in self.knobs}

    def largest(self) -> dict[str, Knob]:
        """Every knob at its last value: the worst case where memory grows along each (the monotone knobs)."""
        return {knob: self.values(knob)[-1] for knob in self.knobs}

    def up(self, config: Config, knob: str) -> dict[str, Knob] | None:
        """`config` with `knob` one allowed value higher (None at the top)."""
        values = self.values(knob)
        i = values.index(config[knob])
        return None if i + 1 == len(values) else {**config, knob: values[i + 1]}

    def monotone_knobs(self) -> tuple[str, ...]:
        """The knobs memory should not fall along: a boundary is searched, and a drop reported, only along these."""
        if self.monotone is not None:
            return self.monotone
        return tuple(k for k in self.knobs if not self._named(k) and not self._flag(k))

    def _named(self, knob: str) -> bool:
        """Whether the knob's values are names: sorted alphabetically, so one "up" is no step up in memory."""
        spec = self.knobs[knob]
        return _range(spec) is None and any(isinstance(v, str) for v in spec)  # a range is whole numbers

    def _flag(self, knob: str) -> bool:
        """Whether the knob's values are flags: True and False, which order no memory (a range is whole numbers)."""
        spec = self.knobs[knob]
        return _range(spec) is None and all(isinstance(v, bool) for v in spec)


def _check_spec(knob: str, spec: object) -> None:
    if not isinstance(knob, str):  # a knob is a param of the scenario, whose name is a string
        raise ValueError(f"envelope knob {knob!r}: a knob's name is a string (a param of the scenario)")  # noqa: TRY004  a declaration's bad value: ValueError, as for every Scenario field
    bounds = _range(spec)
    if bounds is not None:
        if bounds[0] > bounds[1]:
            raise ValueError(f"envelope knob {knob!r}: the range {bounds} is empty (lo > hi)")
        return
    if isinstance(spec, (str, bytes)) or not isinstance(spec, Sequence):
        raise TypeError(f"envelope knob {knob!r}: {spec!r} is neither an (lo, hi) integer range nor a list of values")
    if isinstance(spec, tuple) and len(spec) == 2 and all(isinstance(v, (int, float)) for v in spec):
        # (1.5, 4) looks like a range and was read as two values: 1.5 and 4 explored alone
        raise ValueError(f"envelope knob {knob!r}: {spec!r} is a pair that is no integer range: give a range of whole "
                         f"numbers (lo, hi), or the values to explore as a list {list(spec)!r}")
    if not spec:
        raise ValueError(f"envelope knob {knob!r}: no values to explore")
    for value in spec:  # laid over the scenario's params, which cross into the child as JSON: nan, bytes could not
        if not isinstance(value, str) and not (isinstance(value, int | float) and math.isfinite(value)):
            raise ValueError(f"envelope knob {knob!r}: value {value!r} is no string or finite number")
    try:
        ordered = sorted(spec)
    except TypeError:
        raise ValueError(f"envelope knob {knob!r}: values {list(spec)!r} cannot be ordered") from None
    for a, b in pairwise(ordered):
        if a == b:
            raise ValueError(f"envelope knob {knob!r}: {a!r} is listed twice")


def _range(spec: tuple[int, int] | Sequence[Knob]) -> tuple[int, int] | None:
    """An (lo, hi) integer range, or None for a sequence of allowed values."""
    if isinstance(spec, tuple) and len(spec) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in spec):
        return spec  # (False, True) is no range 0..1: its flag would be given 0 and 1
    return None
