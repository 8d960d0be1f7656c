"""The caching allocator the estimator replays: torch's rules, checked on small request sequences.

Each expectation follows c10/cuda/CUDACachingAllocator.cpp: rounding to 512 bytes, 2 MiB small
segments, 20 MiB segments for requests under 10 MiB, best fit, the splitting thresholds, merging.
"""

from gpu_budget.estimate.allocator import AllocatorPhase, CachingAllocator, replay

KiB, MiB = 2**10, 2**20


def test_requests_round_to_512_bytes_and_open_segments_by_size():
    sim = CachingAllocator()
    sim.allocate(100)
    assert (sim.allocated, sim.reserved) == (512, 2 * MiB)  # a small request: a 2 MiB segment
    sim.allocate(3 * MiB)
    assert (sim.allocated, sim.reserved) == (512 + 3 * MiB, 22 * MiB)  # under 10 MiB: a 20 MiB segment
    sim.allocate(33 * MiB + 1)
    assert sim.reserved == 22 * MiB + 34 * MiB  # 10 MiB and over: rounded up to 2 MiB


def test_a_large_block_is_split_only_when_more_than_1_mib_remains():
    """The default allocator hands out the whole block when 1 MiB or less would remain, and counts all of it as
    allocated; expandable_segments splits at 512 bytes, so allocated stays at the request."""
    for expandable, allocated in ((False, 20 * MiB), (True, 19 * MiB + 512 * KiB)):
        sim = CachingAllocator(expandable=expandable)
        block = sim.allocate(19 * MiB + 512 * KiB)
        assert (sim.allocated, sim.reserved) == (allocated, 20 * MiB)
        sim.free(block)
        assert sim.allocated == 0 and sim.peak_allocated == allocated


def test_freed_blocks_merge_and_are_reused_best_fit_without_new_segments():
    sim = CachingAllocator()
    a, b = sim.allocate(4 * MiB), sim.allocate(8 * MiB)  # one 20 MiB segment: 4 + 8 + 8 free
    sim.free(a)
    sim.free(b)  # merges with a and with the free rest: the whole segment is one free block again
    big = sim.allocate(20 * MiB)
    assert (sim.allocated, sim.reserved) == (20 * MiB, 20 * MiB)
    other = sim.allocate(12 * MiB)  # 10 MiB and over: a segment of exactly 12 MiB
    sim.free(big)
    sim.free(other)
    sim.allocate(11 * MiB)  # best fit: the 12 MiB block (1 MiB left: not split), not the 20 MiB one
    assert sim.allocated == 12 * MiB and sim.reserved == 32 * MiB


def test_replay_gives_each_phase_its_own_peaks_as_the_meter_resets_them():
    log = [(1, 8 * MiB), (2, 4 * MiB), (2, -4 * MiB), (3, 2 * MiB), (1, -8 * MiB)]
    rows = replay(log, [(0, "build"), (3, "step")])
    assert rows == [AllocatorPhase("build", allocated=12 * MiB, reserved=20 * MiB),
                    AllocatorPhase("step", allocated=10 * MiB, reserved=20 * MiB)]


def test_empty_cache_gives_back_only_segments_with_nothing_allocated():
    sim = CachingAllocator()
    a, b = sim.allocate(12 * MiB), sim.allocate(4 * MiB)  # a: its own 12 MiB segment; b: in a 20 MiB one
    c = sim.allocate(2 * MiB)  # beside b in the 20 MiB segment
    sim.free(a)
    sim.free(b)
    sim.empty_cache()
    assert (sim.allocated, sim.reserved) == (2 * MiB, 20 * MiB)  # a's segment went back; c keeps its segment
    sim.free(c)
    sim.empty_cache()
    assert sim.reserved == 0
