"""torch's CUDA caching allocator, replayed on the estimator's log: what max_memory_allocated and _reserved would say.

The tracker's log is every storage a step allocates and frees, in order. A GPU run
hands each request to the caching allocator (c10/cuda/CUDACachingAllocator.cpp),
whose rules this replays:

  rounding      a request is rounded up to 512 bytes (kMinBlockSize)
  pools         requests up to 1 MiB come from the small pool, larger ones from the large pool
  best fit      the smallest cached free block of the pool that is large enough
  segments      with none, a new segment from cudaMalloc: 2 MiB for a small request, 20 MiB for one
                under 10 MiB, else the request rounded up to 2 MiB: reserved memory grows by it
  splitting     a block larger than the request is split when what remains is at least 512 bytes
                (small pool, or expandable_segments) or more than 1 MiB (large pool); otherwise the
                whole block is handed out, and all of it counts as allocated
  freeing       a freed block merges with free neighbours of its segment and stays cached
  empty_cache   segments with nothing allocated go back to the device (reserved shrinks)

So `allocated` can exceed the tensors' bytes (unsplit remainders), and `reserved` is the
segments' total: the figure a card's size limits. Not modelled: max_split_size_mb and
roundup_power2_divisions (their defaults are off), several streams, and
expandable segments' growth in place (expandable=True changes only the splitting rule).
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass, field

from gpu_budget.model.figures import Fields

EMPTY_CACHE = -1  # the tracker's log entry for torch.cuda.empty_cache() (tracker.py)
MIN_BLOCK = 512  # kMinBlockSize
SMALL = 1_048_576  # kSmallSize, 1 MiB: the largest request of the small pool
SMALL_BUFFER = 2_097_152  # kSmallBuffer, 2 MiB: a small-pool segment
LARGE_BUFFER = 20_971_520  # kLargeBuffer, 20 MiB: the segment of a request under MIN_LARGE_ALLOC
MIN_LARGE_ALLOC = 10_485_760  # kMinLargeAlloc, 10 MiB
ROUND_LARGE = 2_097_152  # kRoundLarge, 2 MiB


def round_size(nbytes: int) -> int:
    return max(MIN_BLOCK, -(-nbytes // MIN_BLOCK) * MIN_BLOCK)


def segment_size(size: int) -> int:
    if size <= SMALL:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


@dataclass(eq=False)
class Block:
    size: int
    small: bool
    order: int  # a stand-in for the address: blocks of one size are taken lowest first
    prev: Block | None = None
    next: Block | None = None
    free: bool = True


@dataclass
class CachingAllocator:
    """allocate(nbytes) -> Block, free(Block); `allocated` and `reserved` now, and their peaks."""

    expandable: bool = False
    allocated: int = 0
    reserved: int = 0
    peak_allocated: int = 0
    peak_reserved: int = 0
    _pools: dict[bool, list[tuple[int, int, Block]]] = field(default_factory=lambda: {True: [], False: []})
    _order: itertools.count = field(default_factory=itertools.count)

    def reset_peaks(self) -> None:
        """As torch.cuda.reset_peak_memory_stats: the peaks start again from what is held now."""
        self.peak_allocated, self.peak_reserved = self.allocated, self.reserved

    def allocate(self, nbytes: int) -> Block:
        size = round_size(nbytes)
        small = size <= SMALL
        pool = self._pools[small]
        i = bisect.bisect_left(pool, (size, -1))
        if i < len(pool):
            block = pool.pop(i)[2]
        else:  # a new segment
            block = Block(segment_size(size), small, next(self._order))
            self.reserved += block.size
        remaining = block.size - size
        if remaining >= MIN_BLOCK if (small or self.expandable) else remaining > SMALL:
            rest = Block(remaining, small, next(self._order), prev=block, next=block.next)
            if block.next is not None:
                block.next.prev = rest
            block.next, block.size = rest, size
            self._cache(rest)
        block.free = False
        self.allocated += block.size
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        return block

    def free(self, block: Block) -> None:
        self.allocated -= block.size
        block.free = True
        for neighbour in (block.prev, block.next):
            if neighbour is not None and neighbour.free:
                self._uncache(neighbour)
                block = self._merge(block, neighbour)
        self._cache(block)

    def empty_cache(self) -> None:
        """torch.cuda.empty_cache(): every cached segment with nothing allocated in it goes back to the device."""
        for pool in self._pools.values():
            whole = [entry for entry in pool if entry[2].prev is None and entry[2].next is None]
            for entry in whole:
                pool.remove(entry)
                self.reserved -= entry[2].size

    def _merge(self, block: Block, other: Block) -> Block:
        first, second = (block, other) if block.next is other else (other, block)
        first.size += second.size
        first.next = second.next
        if second.next is not None:
            second.next.prev = first
        return first

    def _cache(self, block: Block) -> None:
        bisect.insort(self._pools[block.small], (block.size, block.order, block))

    def _uncache(self, block: Block) -> None:
        pool = self._pools[block.small]
        i = bisect.bisect_left(pool, (block.size, block.order))
        assert pool[i][2] is block
        pool.pop(i)


@dataclass(frozen=True)
class AllocatorPhase(Fields):
    """One phase's peaks of allocated and reserved bytes through the allocator."""

    name: str
    allocated: int
    reserved: int


def replay(log: list[tuple[int, int]], marks: list[tuple[int, str]], expandable: bool = False) -> list[AllocatorPhase]:
    """Each phase's peaks of allocated and reserved bytes when the log's storages go through the allocator.

    log: (storage id, +bytes at allocation / -bytes at free, or EMPTY_CACHE where the run emptied the cache), in
    order; marks: (log index, phase name). The peaks restart at each phase, as the gate's meter resets them;
    reserved shrinks only at an EMPTY_CACHE entry."""
    sim, blocks, rows = CachingAllocator(expandable=expandable), {}, []
    starts = dict(marks)
    phase = None
    for i, (key, nbytes) in enumerate([*log, (None, 0)]):
        if i in starts:
            if phase is not None:
                rows.append(AllocatorPhase(phase, sim.peak_allocated, sim.peak_reserved))
            sim.reset_peaks()
            phase = starts[i]
        if key is None:
            break
        if key == EMPTY_CACHE:
            sim.empty_cache()
        elif nbytes > 0:
            blocks[key] = sim.allocate(nbytes)
        elif key in blocks:
            sim.free(blocks.pop(key))
    if phase is not None:
        rows.append(AllocatorPhase(phase, sim.peak_allocated, sim.peak_reserved))
    return rows
