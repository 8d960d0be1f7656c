"""The `gpu_budget` marker, as a plain function of the marker's arguments.

`@pytest.mark.gpu_budget(ram="12.7 GiB", vram="15 GiB", tolerance=None, expect=None)`

The marker's help text is generated from this signature and docstring.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpu_budget.baselines import Tolerance
from gpu_budget.scenario import Budget
from gpu_budget.units import parse_size

# Default tolerance, from the run-to-run spread of the gated RAM peak over fresh sessions under the steady
# allocator (benchmarks/RESULTS.md, sections 4 and 5): the widest spread of the five scenarios at tiny scale was
# 2.1 MiB (0.22 % at most); 0.5 % + 4 MiB allows at least 6x the spread at every measured size (6.5 MiB at the
# ~500 MiB import floor) and stays below a +2 % regression there (10 MiB), which was flagged 10 of 10 times.
DEFAULT_TOLERANCE = Tolerance(rel=0.005, abs=4 * 2**20)
EXPECTABLE = ("over-budget",)


@dataclass(frozen=True)
class BudgetMark:
    budget: Budget
    tolerance: Tolerance
    expect: str | None


def gpu_budget(ram: Any = None, vram: Any = None, *, tolerance: Mapping | None = None,
               expect: str | None = None, scale: str = "tiny", where: str = "") -> BudgetMark:
    """memory budget: ram=/vram= a size ("12.7 GiB", "24GB", bytes) or {"tiny": ..., "real": ...};
    tolerance={"rel": 0.02, "abs": "16 MiB"} overrides the baseline tolerance; expect="over-budget"
    marks a reproduction of a reported failure (passes only while the budget is broken)."""
    if expect is not None and expect not in EXPECTABLE:
        raise ValueError(f"{where}: expect={expect!r} is not one of {EXPECTABLE}")
    return BudgetMark(Budget.for_scale(scale, ram, vram, where), _tolerance(tolerance, where), expect)


def merge(markers: Iterable[tuple[tuple, Mapping]], where: str = "") -> dict[str, Any]:
    """One set of gpu_budget arguments from several markers, outermost first (module, class, function,
    parametrize): a closer marker overrides the keys it names and keeps the rest, so a param's
    tolerance refines a function's budget instead of being silently dropped."""
    merged: dict[str, Any] = {}
    for args, kwargs in markers:
        if len(args) > 2:
            raise ValueError(f"{where}: gpu_budget takes at most two positional arguments (ram, vram), got {args!r}")
        merged.update(zip(("ram", "vram"), args))
        merged.update(kwargs)
    return merged


def _tolerance(value: Mapping | None, where: str) -> Tolerance:
    if value is None:
        return DEFAULT_TOLERANCE
    unknown = set(value) - {"rel", "abs"}
    rel = value.get("rel", DEFAULT_TOLERANCE.rel)
    if unknown or not isinstance(rel, (int, float)) or not 0 <= rel < 10:
        raise ValueError(f"{where}: bad tolerance {dict(value)!r}: expected {{'rel': 0..10, 'abs': size}}")
    try:
        abs_ = parse_size(value.get("abs", DEFAULT_TOLERANCE.abs))
    except ValueError as exc:
        raise ValueError(f"{where}: bad tolerance abs: {exc}") from None
    return Tolerance(float(rel), abs_)


def marker_help() -> str:
    params = ", ".join(str(p) for p in inspect.signature(gpu_budget).parameters.values()
                       if p.name not in ("scale", "where"))
    return f"gpu_budget({params}): " + " ".join(gpu_budget.__doc__.split())
