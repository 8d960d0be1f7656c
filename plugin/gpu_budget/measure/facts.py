"""ctx.meter.info: the runner's facts of the row beside the gate's own, the gate's names kept for the gate.

A runner's returned facts are checked against GATE_FACTS as the run returns
(isolate/child.py); the facts it puts in `ctx.meter.info` as it goes share one
mapping with those the meter writes there (the card cap it ran under, how NVML
was read), so a runner's `info["card"] = ...` stood in for the gate's. A write
of one of those names is refused where it is made, naming it.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping

from gpu_budget.model.result import GATE_FACTS, gate_fact_refusal


class RunnerFacts(MutableMapping[str, object]):
    """A dict of facts whose GATE_FACTS names only the gate writes (`gate`); the runner writes the rest."""

    def __init__(self) -> None:
        self._facts: dict[str, object] = {}

    def gate(self, name: str, value: object) -> None:
        """The gate's own fact `name` (GATE_FACTS)."""
        self._facts[name] = value

    def __setitem__(self, name: str, value: object) -> None:
        if name in GATE_FACTS:
            raise ValueError(gate_fact_refusal("ctx.meter.info took a fact named", [name]))
        self._facts[name] = value

    def __delitem__(self, name: str) -> None:
        if name in GATE_FACTS:
            raise ValueError(gate_fact_refusal("ctx.meter.info lost a fact named", [name]))
        del self._facts[name]

    def __getitem__(self, name: str) -> object:
        return self._facts[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._facts)

    def __len__(self) -> int:
        return len(self._facts)

    def __repr__(self) -> str:
        return repr(self._facts)
