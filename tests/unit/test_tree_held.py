"""tmpfs files the tree holds open and maps nowhere (a memfd, a DataLoader batch in flight): host RAM no RSS holds."""

import gc
import mmap
import multiprocessing as mp
import os
import time

import pytest

from gpu_budget.measure import held_tmpfs, tree
from gpu_budget.measure.meter import Meter, can_reset_hwm

MiB = 2**20

pytestmark = pytest.mark.skipif(not (can_reset_hwm() and tree.available() and hasattr(os, "memfd_create")),
                                reason="needs /proc and memfd_create (Linux)")


@pytest.fixture
def meter():
    gc.freeze()  # a GC pass in a forked worker would copy the test process's object headers (test_tree.py)
    m = Meter(use_cuda=False)
    yield m
    m.close()
    gc.unfreeze()


def _hold_memfds(batches: int, mib: int, map_it: bool, conn) -> None:
    """As a DataLoader worker fills its queue: make each batch in a memfd through its mapping, unmap it (or keep it
    mapped) and hold its descriptor, one after another, so no window of the tree's polls sees two being made."""
    fds, views = [], []
    for _ in range(batches):
        fd = os.memfd_create("batch")
        os.ftruncate(fd, mib * MiB)
        view = mmap.mmap(fd, mib * MiB)
        for i in range(0, mib * MiB, 4096):
            view[i] = 1
        fds.append(fd)
        if map_it:
            views.append(view)
        else:
            view.close()
        time.sleep(0.05)  # past a poll (10 ms): the next batch is made in another window
    conn.send("held")
    conn.recv()


def _phase_holding(meter, map_it: bool):
    here, there = mp.get_context("fork").Pipe()
    meter.start("phase")
    proc = mp.get_context("fork").Process(target=_hold_memfds, args=(4, 32, map_it, there))
    proc.start()
    assert here.recv() == "held"
    time.sleep(1.0)  # past two of the tree's reads of held files, shared_every (0.25 s) apart
    here.send("go")
    proc.join()
    return meter.stop()


def test_batches_held_in_memfds_no_process_maps_are_counted(meter):
    """Four 32 MiB batches a worker made one after another and holds, unmapped, by their descriptors: 128 MiB of
    host RAM, of which no window's VmHWM holds more than the batch made in it."""
    record = _phase_holding(meter, map_it=False)
    assert record.tree.held >= 128 * MiB, record.tree
    assert record.ram_tree_peak - record.ram_peak >= 128 * MiB, record.tree


def test_batches_their_holder_maps_are_counted_once(meter):
    record = _phase_holding(meter, map_it=True)
    assert record.tree.held == 0, record.tree
    # once: 128 MiB and the worker's own pages copied since the fork (24.4 MiB beside a whole suite's worker, whose
    # 1.3 GB it forked from); counted twice, as mapped and as held, it would add 128 MiB more
    assert 128 * MiB <= record.ram_tree_peak - record.ram_peak < 128 * MiB + 64 * MiB, record.tree


def test_held_names_a_file_once_and_only_while_nobody_maps_it():
    mounts = held_tmpfs.tmpfs_mounts()
    fd = os.memfd_create("cache")
    try:
        os.write(fd, b"\x01" * (4 * MiB))
        twin = os.dup(fd)  # one file, two descriptors
        (found,) = held_tmpfs.held([os.getpid()], mounts).values()
        assert found == (os.getpid(), 4 * MiB)
        view = mmap.mmap(fd, 4 * MiB)
        assert held_tmpfs.held([os.getpid()], mounts) == {}  # its pages are in this process's RSS now
        view.close()
        os.close(twin)
    finally:
        os.close(fd)
    assert held_tmpfs.held([os.getpid()], mounts) == {}


def test_a_tmpfs_file_made_before_the_tree_began_is_not_the_runs(tmp_path):
    """A dataset copied to /dev/shm before the run, held open and read with read(): host RAM, but not the run's."""
    mounts = held_tmpfs.tmpfs_mounts()
    fd = os.memfd_create("dataset")
    try:
        os.write(fd, b"\x01" * MiB)
        made = os.fstat(fd)
        later = max(made.st_mtime, made.st_ctime) + 1
        assert held_tmpfs.held([os.getpid()], mounts, since=later) == {}
        assert len(held_tmpfs.held([os.getpid()], mounts, since=later - 2)) == 1
    finally:
        os.close(fd)


def test_tmpfs_mounts_are_read_from_mountinfo(tmp_path):
    info = tmp_path / "mountinfo"
    info.write_text("22 1 0:21 / /dev/shm rw,nosuid shared:3 - tmpfs tmpfs rw\n"
                    "23 1 8:1 / / rw shared:1 - ext4 /dev/sda1 rw\n"
                    "24 1 0:22 / /tmp/run\\040a rw - tmpfs tmpfs rw\n")
    assert held_tmpfs.tmpfs_mounts(str(info)) == ("/tmp/run a", "/dev/shm")
    assert held_tmpfs.tmpfs_mounts(str(tmp_path / "missing")) == ()
