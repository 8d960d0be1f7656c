"""The memory a measured child could hold (`Room`): what an out-of-memory death is measured against.

A child that dies of out-of-memory under expect="over-budget" reproduces the
failure only where the memory it died in could hold the budget: a death in a
smaller memory shows that memory is small, not that the run needs more than
the budget (judge/compare.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_budget.units import format_size


@dataclass(frozen=True)
class Room:
    """Host RAM (the host's, or its cgroup's limit where lower) and GPU memory (a card= cap's capacity, else the
    GPU's total) the child could hold, in bytes; None where not known (never held against a death). `card`: the
    card= label where the GPU figure is a cap's."""

    ram: int | None = None
    vram: int | None = None
    card: str | None = None

    def ram_words(self) -> str:
        return f"this host's memory {format_size(self.ram)} (its RAM, or its cgroup's memory limit where lower)"

    def vram_words(self) -> str:
        if self.card is not None:
            return f"card={self.card!r} caps the caching allocator at {format_size(self.vram)}"
        return f"this GPU's total memory {format_size(self.vram)}"
