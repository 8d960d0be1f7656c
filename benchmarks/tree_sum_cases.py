"""The process-tree cases of benchmarks/tree_sum.py, and the truth each one reads of itself.

Run as a user's script (a command case: `python benchmarks/tree_sum_cases.py CASE OUT.json [SEED]`) or
called in-process under a Meter; either way it writes or returns the same facts. Standalone: nothing of
the gate or of benchmarks/ is imported, so under the gate it is a script like any other.

Truth, read by the processes themselves, not by the gate: every child (a subprocess, a DataLoader worker)
reads its own USS (smaps_rollup Private_Clean + Private_Dirty: the pages no other process maps) while it
holds its memory (the idle worker, which must not act, has the main process read that same figure of it),
and the main process reads its own RSS just before it starts the children and just after they are done
(it only waits meanwhile). A group is a set of children alive together; the tree's
true peak is the largest over the groups of main RSS + the group's summed USS, each page counted once
(shared pages are in the main process's RSS, in no child's USS).

    sequential   10 subprocesses, one after another, each touching 300..400 MiB, holding 0.2 s, exiting
    concurrent   a torch DataLoader, 2 forked workers each touching 300 MiB, holding it together (a barrier)
    spike        one shell-out (subprocess.run of a short python) touching 400 MiB, holding 50 ms
    per_epoch    a DataLoader with persistent_workers=False, 3 epochs, 2 forked workers each touching 200 MiB
    idle_worker  the main process touches 300 MiB, forks a worker that only waits, then rewrites its block in
                 place: each page it copies leaves the worker's inherited one the worker's own, with no fault
                 in the worker (a Pool or DataLoader worker waiting for work while the parent trains)
    shm_readers  the main process fills a 300 MiB shared-memory segment (a /dev/shm file); 2 forked readers
                 map it, read every page together, unmap it and exit: the segment is counted once, in the
                 main process's RSS (a dataset kept in shared memory for DataLoader workers)
    queued       a torch DataLoader, 2 forked workers, prefetch_factor 4, 32 MiB batches: the main process waits
                 while the workers fill its queue, 8 batches in flight in shared memory no process maps (each
                 made by a worker, unmapped, and held by a descriptor until the main process takes it); their
                 truth is /dev/shm's own count of the blocks it holds (statvfs), before and after they were made
"""

from __future__ import annotations

import json
import mmap
import os
import random
import subprocess
import sys
import time

MIB = 2**20
SEQ_SIZES = tuple(300 + round(100 * i / 9) for i in range(10))  # 300, 311, ..., 400 MiB
SEQ_HOLD_S = 0.2
LOADER_MIB = 300
SPIKE_MIB, SPIKE_HOLD_S = 400, 0.05
EPOCHS, EPOCH_MIB = 3, 200
WORKERS = 2
BARRIER_TIMEOUT_S = 60

# the child of a shell-out: touch, read its own USS while it holds, print it, hold, exit
CHILD = """
import sys, time
n, hold = int(sys.argv[1]), float(sys.argv[2])
block = b"\\x01" * (n << 20)
uss = 0
with open("/proc/self/smaps_rollup") as fh:
    for line in fh:
        if line.startswith(("Private_Clean:", "Private_Dirty:")):
            uss += int(line.split()[1]) * 1024
print(uss, flush=True)
time.sleep(hold)
"""


def uss(pid: int | str = "self") -> int:
    total = 0
    with open(f"/proc/{pid}/smaps_rollup") as fh:
        for line in fh:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1]) * 1024
    return total


def rss() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise OSError("no VmRSS")


def shell_out(mib: int, hold: float) -> dict:
    """One subprocess of `mib` MiB: its own USS at its peak, and the main process's RSS around it."""
    before = rss()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(mib), str(hold)], capture_output=True, text=True, check=True)
    return {"main_rss": max(before, rss()), "children": [{"mib": mib, "uss": int(proc.stdout.split()[0])}]}


def sequential(seed: int = 0) -> dict:
    sizes = list(SEQ_SIZES)
    random.Random(seed).shuffle(sizes)  # the largest is not always last
    return {"groups": [shell_out(mib, SEQ_HOLD_S) for mib in sizes]}


def spike(seed: int = 0) -> dict:
    return {"groups": [shell_out(SPIKE_MIB, SPIKE_HOLD_S)]}


class Touching:
    """A map-style dataset of one item per worker: each touches `mib` MiB, waits at the barrier for the others,
    reads its own USS, holds `hold` s with them, frees it and returns (its pid, its USS)."""

    def __init__(self, mib: int, barrier, hold: float = 0.3) -> None:
        self.mib, self.barrier, self.hold = mib, barrier, hold

    def __len__(self) -> int:
        return WORKERS

    def __getitem__(self, i: int):
        import torch

        block = b"\x01" * (self.mib * MIB)
        self.barrier.wait(BARRIER_TIMEOUT_S)  # every worker holds its block from here ...
        own = uss()
        time.sleep(self.hold)
        self.barrier.wait(BARRIER_TIMEOUT_S)  # ... to here
        del block
        return torch.tensor([os.getpid(), own], dtype=torch.int64)


def _loader(mib: int, epochs: int, persistent: bool) -> dict:
    import multiprocessing as mp

    from torch.utils.data import DataLoader

    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(WORKERS)
    dl = DataLoader(Touching(mib, barrier), batch_size=1, num_workers=WORKERS, multiprocessing_context=ctx,
                    persistent_workers=persistent)
    groups = []
    for _ in range(epochs):
        before = rss()
        items = [b[0].tolist() for b in dl]  # an epoch: its workers start, each touches once, and (per epoch) exit
        groups.append({"main_rss": max(before, rss()),
                       "children": [{"pid": pid, "mib": mib, "uss": own} for pid, own in items]})
    del dl
    return {"groups": groups}


def concurrent(seed: int = 0) -> dict:
    return _loader(LOADER_MIB, 1, persistent=False)


def per_epoch(seed: int = 0) -> dict:
    return _loader(EPOCH_MIB, EPOCHS, persistent=False)


IDLE_MIB = 300
SHM_MIB = 300


def _touch(buffer, value: int) -> None:
    """One write per page of `buffer`, without a temporary of its size (which would be a peak of its own)."""
    memoryview(buffer)[::4096] = bytes([value]) * len(range(0, len(buffer), 4096))


def idle_worker(seed: int = 0) -> dict:
    """One forked worker blocked on a pipe while the main process rewrites the block it inherited. The worker does
    nothing at all (no page fault of its own), so its USS is read from the main process, the kernel's same figure
    (/proc/<pid>/smaps_rollup), while both hold."""
    block = bytearray(IDLE_MIB * MIB)  # zero pages, mapped lazily: touched one write per page, no temporary copy
    _touch(block, 1)
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: blocked until told to exit
        os.read(go_r, 1)
        os._exit(0)
    _touch(block, 2)  # every page copied: the worker's inherited one is left its own
    main = rss()
    time.sleep(SEQ_HOLD_S)  # both hold: a poll or two of the gate's
    own = uss(pid)
    os.write(go_w, b"x")
    os.waitpid(pid, 0)
    os.close(go_r)
    os.close(go_w)
    del block
    return {"groups": [{"main_rss": main, "children": [{"pid": pid, "mib": IDLE_MIB, "uss": own}]}]}


def _read_segment(path: str, barrier, out) -> None:
    """A reader: maps the segment by its name, reads every page, holds it with the other reader, unmaps it."""
    fd = os.open(path, os.O_RDONLY)
    segment = mmap.mmap(fd, SHM_MIB * MIB, mmap.MAP_SHARED, mmap.PROT_READ)
    os.close(fd)
    total = sum(segment[i] for i in range(0, len(segment), 4096))  # a read of every page: mapped, not copied
    barrier.wait(BARRIER_TIMEOUT_S)
    out.send((os.getpid(), uss(), total))
    time.sleep(SEQ_HOLD_S)
    barrier.wait(BARRIER_TIMEOUT_S)
    segment.close()  # unmapped, as SharedMemory.close() does, before the reader exits


def shm_readers(seed: int = 0) -> dict:
    """Two forked readers of one shared-memory segment (a /dev/shm file, what multiprocessing.shared_memory makes,
    without its resource tracker: a process of its own that would outlive the case in the in-process mode) the main
    process filled."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    path = f"/dev/shm/tree-sum-{os.getpid()}-{seed}"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, SHM_MIB * MIB)
        segment = mmap.mmap(fd, SHM_MIB * MIB, mmap.MAP_SHARED)
        _touch(segment, 1)
        barrier = ctx.Barrier(WORKERS)
        pipes = [ctx.Pipe(duplex=False) for _ in range(WORKERS)]
        readers = [ctx.Process(target=_read_segment, args=(path, barrier, w)) for _, w in pipes]
        for reader in readers:
            reader.start()
        children = [dict(zip(("pid", "uss", "sum"), r.recv())) for r, _ in pipes]
        main = rss()
        for reader in readers:
            reader.join(BARRIER_TIMEOUT_S)
        segment.close()
        return {"groups": [{"main_rss": max(main, rss()),
                            "children": [{"pid": c["pid"], "mib": 0, "uss": c["uss"]} for c in children]}]}
    finally:
        os.close(fd)
        os.unlink(path)


QUEUE_PREFETCH, QUEUE_MIB, QUEUE_HOLD_S = 4, 32, 1.0


class Batches:
    """A map-style dataset of WORKERS x QUEUE_PREFETCH items of QUEUE_MIB MiB each: one queue's worth. An item is a
    view of one value (no memory of its own): a worker's memory while it makes a batch is the batch alone, written
    into shared memory by the DataLoader's collate, so the tree's true peak is the queue full, as read."""

    def __len__(self) -> int:
        return WORKERS * QUEUE_PREFETCH

    def __getitem__(self, i: int):
        import torch

        return torch.ones(1).expand(QUEUE_MIB * MIB // 4)


def shm_used() -> int:
    """The bytes /dev/shm holds, files unlinked but held open included (a torch batch in flight is one)."""
    fs = os.statvfs("/dev/shm")
    return (fs.f_blocks - fs.f_bfree) * fs.f_frsize


def queued(seed: int = 0) -> dict:
    """The main process starts the loader and waits while its workers fill the queue (it takes no batch yet): each
    batch is made in shared memory by a worker, which unmaps it and holds its descriptor for the main process; the
    workers then wait for more indices. Held QUEUE_HOLD_S: past the two reads of held files, 0.25 s apart, the gate
    counts a file after."""
    import multiprocessing as mp

    from torch.utils.data import DataLoader

    ctx = mp.get_context("fork")
    total = WORKERS * QUEUE_PREFETCH * QUEUE_MIB * MIB
    shm_before, main_before = shm_used(), rss()
    dl = DataLoader(Batches(), batch_size=1, num_workers=WORKERS, prefetch_factor=QUEUE_PREFETCH,
                    multiprocessing_context=ctx)
    batches = iter(dl)
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while shm_used() - shm_before < total and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(QUEUE_HOLD_S)
    in_flight = shm_used() - shm_before
    workers = [{"pid": w.pid, "mib": 0, "uss": uss(w.pid)} for w in batches._workers]
    main = rss()
    taken = sum(1 for _ in batches)
    del batches, dl
    assert taken == WORKERS * QUEUE_PREFETCH, taken
    return {"groups": [{"main_rss": max(main_before, main),
                        "children": [*workers, {"pid": None, "mib": total // MIB, "uss": in_flight, "in_flight": True}]}]}


CASES = {"sequential": sequential, "concurrent": concurrent, "spike": spike, "per_epoch": per_epoch,
         "idle_worker": idle_worker, "shm_readers": shm_readers, "queued": queued}


def main() -> None:
    case, out = sys.argv[1], sys.argv[2]
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    if case in ("concurrent", "per_epoch", "queued"):
        import torch  # imported before anything is measured of the case, as a training script does first

        torch.set_num_threads(1)
    facts = CASES[case](seed)
    with open(out, "w") as fh:
        json.dump(facts, fh)


if __name__ == "__main__":
    main()
