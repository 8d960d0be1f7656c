"""Files a worker maps (a dataset's np.memmap, safetensors shards): their pages are in its RSS, shared where another
process maps them too, and leave it when it unmaps them."""

import gc
import mmap
import multiprocessing as mp
import time

import pytest

from gpu_budget.measure import tree
from gpu_budget.measure.meter import Meter, can_reset_hwm

MiB = 2**20
FILE_MIB = 64
SLACK = 12 * MiB  # a worker's own pages written after fork (test_tree.py)

pytestmark = pytest.mark.skipif(not (can_reset_hwm() and tree.available()), reason="needs /proc (Linux)")


@pytest.fixture
def meter():
    gc.freeze()  # a GC pass in a forked worker would copy the test process's object headers (test_tree.py)
    m = Meter(use_cuda=False)
    yield m
    m.close()
    gc.unfreeze()


@pytest.fixture
def weights(tmp_path):
    """A file as a checkpoint shard is: written, never mapped by the test process."""
    path = tmp_path / "shard.bin"
    path.write_bytes(b"\x01" * (FILE_MIB * MiB))
    return path


def _read_mapped(path, conn, stay: float) -> None:
    """Map the file, read every page, then unmap it (a memmap dropped) before the process ends."""
    with open(path, "rb") as fh:
        view = mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ)
    total = sum(view[::4096])
    conn.send(total > 0)
    conn.recv()
    time.sleep(0.3)  # read by the polls while it maps the file (past a periodic re-read of its shared pages)
    view.close()
    time.sleep(stay)  # 0: gone right after it unmapped the file, its exit report its last window; else polled


def _run_readers(meter, path, readers: int, stay: float):
    ctx = mp.get_context("fork")
    pipes = [ctx.Pipe() for _ in range(readers)]
    meter.start("phase")
    procs = [ctx.Process(target=_read_mapped, args=(path, there, stay)) for _, there in pipes]
    for proc in procs:
        proc.start()
    for here, _ in pipes:
        assert here.recv()
    for here, _ in pipes:
        here.send("go")
    for proc in procs:
        proc.join()
    return meter.stop(), [proc.pid for proc in procs]


def _added(record, pids) -> int:
    return sum(d.private_peak for d in record.tree.detail if d.pid in pids)


@pytest.mark.parametrize("stay", [0, 0.1])
def test_a_file_two_workers_map_is_not_counted_once_per_worker(meter, weights, stay):
    """Two fork workers map one file and read all of it, then unmap it: its pages were shared by both while they
    held them, yet each worker's VmHWM holds them and its shared pages, read after the unmap, no longer do. Before,
    each counted the file as its own: the tree added 2 x 64 MiB for 64 MiB of page cache (a 256 MiB file: +516 MiB)."""
    record, pids = _run_readers(meter, weights, 2, stay)
    assert all(d.hwm > FILE_MIB * MiB for d in record.tree.detail if d.pid in pids), record.tree  # both mapped it all
    assert _added(record, pids) <= FILE_MIB * MiB + 2 * SLACK, record.tree


def test_a_file_one_worker_maps_alone_counts_as_its_own(meter, weights):
    """A worker maps a file nobody else maps, reads it and unmaps it: its pages were its own while it mapped them."""
    record, pids = _run_readers(meter, weights, 1, 0)
    assert FILE_MIB * MiB <= _added(record, pids) <= FILE_MIB * MiB + SLACK, record.tree
