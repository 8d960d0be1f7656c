"""Run a process as on a smaller card: its caching allocator capped at the card's memory less its CUDA context.

`torch.cuda.set_per_process_memory_fraction(f, device)` stops the caching
allocator from holding more than f x the device's total memory: past it, the
allocator frees its cached blocks and retries, as it does on a card that size,
and raises OutOfMemoryError where that is not enough. The CUDA context lives
outside the allocator and takes its share of the target card too, so the limit
is the card's capacity less the context this process holds, read once CUDA is
up: NVML's figure of this process (matched by pid) less what its allocator has
reserved; where NVML cannot see the process, the device's used memory, which
counts every other process on it as well, so the cap is then the tighter one.

What the cap reproduces: the allocator's limit and its free-and-retry. What it
does not: the target card's kernels and their workspaces, its bandwidth, its
driver. Called only in a process that measures CUDA (a function case's child,
a command's process through its hook); it imports nothing of torch itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpu_budget.model.card import Card, more_than
from gpu_budget.units import format_size


class CardTooBig(ValueError):
    """The target card holds more than this process's GPU: a cap cannot make a card bigger."""


@dataclass(frozen=True)
class Capped:
    """The cap a process ran under: the allocator's limit, and the context taken off the card to get it."""

    card: Card
    limit: int  # bytes the caching allocator may hold
    context: int  # the CUDA context taken off the card's capacity
    context_method: str  # "pid": NVML's figure of this process; "device": the device's used memory

    @property
    def note(self) -> str:
        whose = "this process's" if self.context_method == "pid" else "the device's used memory as the"
        return (f"ran as on {self.card.label}: the caching allocator capped at {format_size(self.limit)} (the card "
                f"less {whose} CUDA context, {format_size(self.context)})")


    def out_of_memory(self, phase: str | None, step: int | None, error: str) -> str:
        """An out-of-memory error under this cap, named with the card, the phase and the step it happened in."""
        where = f"in phase {phase}" + (f" (step {step})" if step is not None else "") if phase else "before any phase"
        return (f"out of memory as on {self.card.label}, {where}: the caching allocator was capped at "
                f"{format_size(self.limit)} (the card less a CUDA context of {format_size(self.context)}): {error}")


def context_bytes(torch, device: int, nvml_read: Callable[[], tuple[int | None, str | None]] | None) -> tuple[int, str]:
    """(bytes, method) of the CUDA context this process holds on `device`, its allocator's reservation left out."""
    reserved = int(torch.cuda.memory_reserved(device))
    used, method = nvml_read() if nvml_read is not None else (None, None)
    if used is not None and method == "pid":
        return max(0, used - reserved), "pid"
    free, total = torch.cuda.mem_get_info(device)
    return max(0, int(total) - int(free) - reserved), "device"


def cap(torch, device: int, card: Card, nvml_read: Callable[[], tuple[int | None, str | None]] | None) -> Capped:
    """Cap this process's caching allocator on `device` at `card`'s capacity less its context; CardTooBig where the
    card holds more than the device, ValueError where its context leaves it nothing."""
    total = int(torch.cuda.get_device_properties(device).total_memory)
    if more_than(card.capacity, total):
        raise CardTooBig(f"{card.label} holds more than this GPU's {format_size(total)}: a cap cannot make it bigger")
    context, method = context_bytes(torch, device, nvml_read)
    limit = min(card.capacity, total) - context  # a card within the printed figure's rounding of this GPU: this GPU
    if limit <= 0:
        raise ValueError(f"{card.label}: this process's CUDA context ({format_size(context)}) leaves it no memory")
    torch.cuda.set_per_process_memory_fraction(limit / total, device)
    return Capped(card, limit, context, method)


def nvml_reader(torch, device: int) -> Callable[[], tuple[int | None, str | None]] | None:
    """A read of NVML's figure of this process on `device` ((bytes, method)), or None where NVML is absent."""
    from gpu_budget.measure import nvml

    memory, _ = nvml.open_for(torch, device, None)
    return reading(memory)


def reading(memory) -> Callable[[], tuple[int | None, str | None]] | None:
    """A read of an open nvml.DeviceMemory: (bytes, the method that matched this process); None for no memory."""
    if memory is None:
        return None
    return lambda: (memory.read(), memory.method)
