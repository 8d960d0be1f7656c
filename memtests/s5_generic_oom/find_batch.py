"""accelerate's find_executable_batch_size on S5's step, on a card capped at a budget: the usual way to find a batch.

The gate's boundary search (search.py) runs each batch in a fresh child and compares
its allocated peak with a budget. accelerate's decorator runs the step in one process
from a starting batch and shrinks it by its factor (0.9 in accelerate 1.x) at every
out-of-memory error. So that both stop at the same budget, this runner caps torch's
caching allocator at it (torch.cuda.set_per_process_memory_fraction: the memory it
reserves may not pass the cap) and the card behaves as one of that size. Each try runs
runner.run whole (model, optimizer, data, steps), as accelerate's own examples build
everything inside the decorated function, and is its own phase: `try<N>.<phase>`.

CUDA only: a CPU allocator has no cap, and a real out-of-memory there takes the host down.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from . import runner


@dataclass
class AccelerateSearch:
    """tried: every batch accelerate ran, in order; batch_size: the one that ran through (None: none did)."""

    start: int
    tried: list[int] = field(default_factory=list)
    batch_size: int | None = None
    errors: list[str] = field(default_factory=list)  # the first line of each out-of-memory error

    @property
    def runs(self) -> int:
        return len(self.tried)


def accelerate_search(step: Callable[[int], object], start: int) -> AccelerateSearch:
    """Run `step(batch)` under accelerate's find_executable_batch_size from `start`; record every try."""
    from accelerate.utils import find_executable_batch_size

    found = AccelerateSearch(start)

    @find_executable_batch_size(starting_batch_size=start)
    def attempt(batch_size: int) -> int:
        found.tried.append(batch_size)
        try:
            step(batch_size)
        except RuntimeError as exc:
            found.errors.append(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            raise
        return batch_size

    try:
        found.batch_size = attempt()
    except RuntimeError as exc:
        if "No executable batch size found" not in str(exc):
            raise
    return found


class _Try:
    """The child's RunContext for one try: its batch size, its phases named try<N>.<phase>, no step numbers."""

    def __init__(self, ctx, batch: int, n: int) -> None:
        self._ctx, self.params, self.meter = ctx, {**ctx.params, "batch_size": batch}, _Prefixed(ctx.meter, f"try{n}.")

    def __getattr__(self, name: str):
        return getattr(self._ctx, name)


class _Prefixed:
    def __init__(self, meter, prefix: str) -> None:
        self._meter, self._prefix = meter, prefix

    def start(self, name: str, step: int | None = None) -> None:  # steps of several tries would repeat
        self._meter.start(self._prefix + name)

    def __getattr__(self, name: str):
        return getattr(self._meter, name)


def run(ctx) -> dict:
    """The child: cap the allocator at params["vram_cap"] bytes, then let accelerate find the batch."""
    import torch

    if ctx.device != "cuda":
        raise RuntimeError(f"{__name__} caps the CUDA caching allocator: it needs a CUDA device, not {ctx.device!r}")
    cap, total = ctx.params["vram_cap"], torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(cap / total)
    tries = itertools.count(1)
    found = accelerate_search(lambda batch: runner.run(_Try(ctx, batch, next(tries))), ctx.params["find_batch_from"])
    ctx.meter.stop()
    return {"vram_cap": cap, "start": found.start, "tried": found.tried, "batch_size": found.batch_size,
            "runs": found.runs, "errors": found.errors}
