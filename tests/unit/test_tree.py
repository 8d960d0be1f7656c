"""The process tree's figure: each descendant adds what it holds of its own, however it was started and whenever it exits."""

import gc
import multiprocessing as mp
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from gpu_budget.measure import tree
from gpu_budget.measure.meter import Meter, can_reset_hwm

MiB = 2**20
SLACK = 12 * MiB  # a child's own pages written after fork (its stack, allocator arenas, refcounts, a GC pass)

pytestmark = pytest.mark.skipif(not (can_reset_hwm() and tree.available()), reason="needs /proc (Linux)")


@pytest.fixture
def meter():
    """A Meter in this process. Its objects are frozen first: a GC pass in a forked worker would otherwise write
    the headers of every object the test process holds (torch, the whole suite under xdist: tens of MiB of
    copied pages, more than SLACK), which is the test process's size, not what the worker touched."""
    gc.freeze()
    m = Meter(use_cuda=False)
    yield m
    m.close()
    gc.unfreeze()


def touch(mib: int, hold: float, conn=None) -> None:
    block = b"\x01" * (mib * MiB)
    if conn is not None:
        conn.send("touched")
        conn.recv()
    time.sleep(hold)
    del block


def added(record, *pids: int) -> int:
    """What these descendants added in the phase (other descendants, e.g. multiprocessing's resource tracker
    started by an earlier test in this process, are left out)."""
    return sum(d.private_peak for d in record.tree.detail if d.pid in pids)


def one(record, pid: int) -> dict:
    (entry,) = [d for d in record.tree.detail if d.pid == pid]
    return entry


def _held(parent_mib: int) -> bytes:
    return b"\x02" * (parent_mib * MiB)


def test_a_fork_worker_adds_its_own_pages_not_the_parents(meter):
    held = _held(128)  # the parent's memory: every fork worker maps it, none copies it
    ctx = mp.get_context("fork")
    here, there = ctx.Pipe()
    meter.start("phase")
    proc = ctx.Process(target=touch, args=(64, 0, there))
    proc.start()
    assert here.recv() == "touched"
    record = meter.stop()  # the worker still alive at the phase end: its VmHWM and shared pages read there
    here.send("go")
    proc.join()
    assert 64 * MiB <= added(record, proc.pid) <= 64 * MiB + SLACK, record.tree
    assert one(record, proc.pid).hwm > (128 + 64) * MiB  # its VmHWM counts the parent's 128 MiB once more
    assert record.ram_tree_peak - record.ram_peak >= added(record, proc.pid)
    assert not one(record, proc.pid).exited
    del held


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_a_worker_that_exits_right_after_its_spike_is_counted(meter, start):
    held = _held(64)
    ctx = mp.get_context(start)
    meter.start("phase")
    procs = [ctx.Process(target=touch, args=(96, 0.02)) for _ in range(2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()  # reaped inside the phase: a zombie's /proc holds no memory figures
    record = meter.stop()
    pids = [proc.pid for proc in procs]
    interpreter = 0 if start == "fork" else 40 * MiB  # a spawned worker is a fresh Python of its own
    assert 2 * 96 * MiB <= added(record, *pids) <= 2 * (96 * MiB + SLACK + interpreter), record.tree
    # the tree is the peak of their sum over time: at least one worker's peak, at most both (they may not overlap)
    tree_added = record.ram_tree_peak - record.ram_peak
    assert max(one(record, pid).private_peak for pid in pids) <= tree_added <= record.tree.peak_sum, record.tree
    assert all(one(record, pid).exited for pid in pids) and record.tree.unread == 0
    if start == "fork":  # they reported their own VmHWM as they exited: exact
        assert all(one(record, pid).reported for pid in pids)
    del held


def test_copy_on_write_copies_count_though_rss_does_not_move(meter):
    objects = [str(i) * 3 for i in range(1_500_000)]  # ~100 MiB of small objects in the parent
    ctx = mp.get_context("fork")
    here, there = ctx.Pipe()

    def refcount_every_object(conn, objects):
        for obj in objects:  # each visit writes the object's refcount: its page is copied
            pass
        conn.send("done")
        conn.recv()

    meter.start("phase")
    proc = ctx.Process(target=refcount_every_object, args=(there, objects))
    proc.start()
    assert here.recv() == "done"
    record = meter.stop()
    here.send("go")
    proc.join()
    child = one(record, proc.pid)
    assert child.hwm < record.ram_peak + 16 * MiB  # its RSS hardly rose over the parent's pages it maps ...
    assert child.private_peak > 60 * MiB  # ... yet most of them are now its own copies, and counted
    del objects


def test_an_exec_drops_the_image_it_replaced(meter):
    held = _held(256)
    meter.start("phase")
    script = "import time; b = b'\\x01' * (48 << 20); time.sleep(0.3)"
    proc = subprocess.Popen([sys.executable, "-c", script])
    assert proc.wait() == 0
    record = meter.stop()
    # a fresh Python + 48 MiB, not the parent's 256 MiB it mapped between fork and exec
    assert 48 * MiB <= added(record, proc.pid) <= 48 * MiB + 40 * MiB, record.tree
    del held


def test_plain_fork_children_are_polled(meter):
    meter.start("phase")
    pid = os.fork()
    if pid == 0:  # no multiprocessing: no exit report, the poll every 10 ms sees it
        try:
            touch(64, 0.2)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    record = meter.stop()
    assert 64 * MiB <= added(record, pid) <= 64 * MiB + SLACK, record.tree
    assert not one(record, pid).reported and record.tree.max_gap < 0.5


def test_phases_reset_live_descendants(meter):
    ctx = mp.get_context("fork")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=touch, args=(64, 0, there))
    proc.start()
    assert here.recv() == "touched"
    meter.start("holding")
    time.sleep(0.05)
    here.send("go")
    proc.join()
    meter.start("after")  # the worker is gone: it is forgotten, nothing carries over
    after = meter.stop()
    holding = meter.phases[0]
    assert added(holding, proc.pid) >= 64 * MiB
    assert added(after, proc.pid) == 0 and proc.pid not in [d.pid for d in after.tree.detail]


def test_no_descendants_is_the_main_process(tmp_path):
    script = tmp_path / "alone.py"
    script.write_text(textwrap.dedent('''
        from gpu_budget.measure.meter import Meter
        meter = Meter(use_cuda=False)
        with meter.phase("alone"):
            spike = b"\\x01" * (32 << 20)
            del spike
        record = meter.phases[0]
        print(record.ram_tree_peak - record.ram_peak, record.tree.processes, meter.summary().ram_tree_method)
        meter.close()
    '''))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", "0", "vmhwm+peak-of-summed-descendants"]


def test_an_orphaned_helper_stays_in_a_subreapers_tree(tmp_path):
    """A helper that daemonises (its parent exits) re-parents to the measured child, so its memory stays counted."""
    script = tmp_path / "orphan.py"
    script.write_text(textwrap.dedent('''
        import os, sys, time
        from gpu_budget.isolate.lifecycle import become_subreaper
        from gpu_budget.measure.meter import Meter
        assert become_subreaper()
        meter = Meter(use_cuda=False)
        meter.start("phase")
        if os.fork() == 0:                      # the helper's launcher ...
            if os.fork() == 0:                  # ... starts it and exits at once
                block = b"\\x01" * (64 << 20)
                time.sleep(0.5)
                os._exit(0)
            os._exit(0)
        time.sleep(0.8)
        record = meter.stop()
        print(record.ram_tree_peak - record.ram_peak)
        meter.close()
    '''))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    assert int(out.stdout) >= 64 * MiB, out


def test_a_vforked_child_is_not_read_before_its_exec(monkeypatch):
    """Until a vfork()ed child execs, its /proc figures are its parent's: the first read waits for the exec."""
    held = _held(128)
    borrowing = {"yes": True}
    monkeypatch.setattr(tree, "borrows_parent_memory", lambda pid, ppid: borrowing["yes"])
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        t = tree.ProcessTree()  # polled by hand here, no thread
        t.phase_start()
        t.poll()
        (d,) = [d for d in t.phase_end().detail if d.pid == proc.pid]
        assert d.hwm == 0 and d.shared is None  # seen, not read: the parent's 128 MiB are not its own
        borrowing["yes"] = False
        t.poll()
        (d,) = [d for d in t.phase_end().detail if d.pid == proc.pid]
        assert 0 < d.private_peak < 40 * MiB
    finally:
        proc.communicate(b"")
    del held


def test_only_a_child_sharing_its_parents_memory_borrows_it():
    pid = os.fork()
    if pid == 0:
        time.sleep(0.3)
        os._exit(0)
    try:  # forked, not exec'd, but in its own copy of the memory map
        assert not tree.borrows_parent_memory(pid, os.getpid())
    finally:
        os.waitpid(pid, 0)
    proc = subprocess.Popen(["sleep", "0.3"])
    time.sleep(0.1)
    assert not tree.borrows_parent_memory(proc.pid, os.getpid())  # exec'd
    proc.wait()
    # and one that does share it: a thread of this process is a task in this very memory map (as a vforked
    # child is until it execs), so the kcmp path must say yes
    seen, done = {}, threading.Event()
    thread = threading.Thread(target=lambda: (seen.setdefault("tid", threading.get_native_id()), done.wait(5)))
    thread.start()
    try:
        while "tid" not in seen:
            time.sleep(0.001)
        assert tree.borrows_parent_memory(seen["tid"], os.getpid())
    finally:
        done.set()
        thread.join()


def test_a_meter_dropped_without_close_stops_polling():
    """Its tree's thread holds the tree weakly: once nothing else does, it stops resetting descendants' VmHWM (a
    leaked Meter in a test process would otherwise reset every later subprocess's peak, every 10 ms)."""
    import gc
    import threading

    before = {t for t in threading.enumerate() if t.name == "gpu-budget-tree"}
    meter = Meter(use_cuda=False)
    (thread,) = {t for t in threading.enumerate() if t.name == "gpu-budget-tree"} - before
    del meter
    gc.collect()
    thread.join(timeout=2)
    assert not thread.is_alive()


RANK_SCRIPT = textwrap.dedent('''
    import multiprocessing as mp, os, sys, time

    def hold(mib):
        block = b"\\x01" * (mib << 20)
        time.sleep(0.5)

    if __name__ == "__main__":
        block = b"\\x01" * (int(sys.argv[1]) << 20)
        if len(sys.argv) > 2:  # a forked worker of this rank: its rank's, though its environ says nothing new
            worker = mp.get_context("fork").Process(target=hold, args=(int(sys.argv[2]),))
            worker.start()
            worker.join()
        else:
            time.sleep(0.5)
''')


def test_the_processes_a_launcher_starts_are_grouped_by_their_rank_with_their_workers(meter, tmp_path):
    """Rank 0 holds 40 MiB; rank 1 holds 60 MiB and its forked worker 50 MiB more: each rank's tree is its own."""
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    meter.start("phase")
    procs = [subprocess.Popen([sys.executable, str(script), *args], env={**os.environ, "RANK": str(rank)})
             for rank, args in ((0, ["40"]), (1, ["60", "50"]))]
    for proc in procs:
        proc.wait()
    record = meter.stop()
    ranks = record.tree.ranks
    assert sorted(ranks) == [0, 1], ranks
    assert ranks[1].processes == 2 and ranks[0].processes == 1, ranks
    # each rank's own process counted whole: an interpreter (~10 MiB) and what it holds
    assert 40 * MiB < ranks[0].ram < 40 * MiB + 3 * SLACK, ranks
    # rank 1's tree: its process with its worker's 50 MiB, which rank 0's figure never holds
    assert 50 * MiB <= ranks[1].ram_tree - ranks[1].ram <= 50 * MiB + SLACK, ranks
    assert ranks[1].ram_tree - ranks[0].ram_tree >= 20 * MiB + 50 * MiB - SLACK, ranks


def test_a_fork_that_execs_a_rank_late_is_that_rank(meter, tmp_path):
    """A launcher's fork (a shell's subshell, here) is seen while it is still the fork: it sets RANK and execs the
    rank's process only later, whose image reads no smaller than the fork's. It is rank 1 all the same: a fork's
    rank stays open while it is the fork, not only until its first read (a rank was lost so under load, the exec
    under way past two polls)."""
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    meter.start("phase")
    subprocess.run(["sh", "-c", f'(sleep 0.3; RANK=1 exec "{sys.executable}" "{script}" 40)'], check=True)
    record = meter.stop()
    assert sorted(record.tree.ranks) == [1], record.tree
    assert record.tree.ranks[1].ram > 40 * MiB, record.tree


def test_a_rank_read_while_its_exec_is_under_way_is_read_again(monkeypatch):
    """A process caught inside its exec (its new image in, its environment not yet on its stack) reads an empty
    environ: that is no answer, and the next poll reads its RANK. The kernel's window is too short to hit on
    demand, so the first read is made to see it."""
    under_exec = {"reads": 1}
    real_read = tree.read_environ

    def read_environ(pid):
        if pid == proc.pid and under_exec["reads"]:
            under_exec["reads"] -= 1
            return None
        return real_read(pid)

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"], env={**os.environ, "RANK": "1"})
    monkeypatch.setattr(tree, "read_environ", read_environ)
    try:
        time.sleep(0.2)  # exec'd: no fork's flag
        t = tree.ProcessTree()  # polled by hand here, no thread
        t.poll()
        assert t.members()[proc.pid] is None and under_exec["reads"] == 0
        t.poll()
        assert t.members()[proc.pid] == 1 and t.rank_pids == {1: [proc.pid]}
    finally:
        proc.kill()
        proc.wait()


def _idle(conn) -> None:
    conn.send("ready")
    conn.recv()  # blocked: no page fault of its own until told to go


def test_an_idle_workers_inherited_pages_count_once_the_parent_copies_them(meter):
    """The parent writes its array in place after forking a worker that only waits: each page the parent copies
    leaves the worker's inherited one its own, though the worker faults nothing. Both copies are resident."""
    held = bytearray(b"\x02" * (128 * MiB))
    ctx = mp.get_context("fork")
    here, there = ctx.Pipe()
    meter.start("phase")
    proc = ctx.Process(target=_idle, args=(there,))
    proc.start()
    assert here.recv() == "ready"
    time.sleep(0.1)  # the worker is seen and its shared pages read while it shares the parent's 128 MiB
    for i in range(0, len(held), 4096):
        held[i] = 3  # a copy-on-write copy in the parent: the worker's page is no longer shared
    time.sleep(0.4)  # past a periodic re-read
    record = meter.stop()  # the worker still alive (and idle) at the phase end
    here.send("go")
    proc.join()
    assert added(record, proc.pid) >= 120 * MiB, record.tree
    del held


def _read_segment(name: str, conn, stay: float) -> None:
    """Attach to a shared-memory segment, read every page, then close() it: unmapped before the process ends."""
    from multiprocessing import shared_memory

    segment = shared_memory.SharedMemory(name=name)
    total = sum(segment.buf[::4096])  # every page mapped by this process too
    conn.send(total)
    conn.recv()
    time.sleep(0.3)  # read by the polls while it maps the segment (past a periodic re-read of its shared pages)
    segment.close()
    time.sleep(stay)  # 0: gone right after its close(), its exit report its last window; else polled after it


@pytest.mark.parametrize("stay", [0, 0.1])
def test_readers_of_a_shared_memory_segment_do_not_count_it_again(meter, stay):
    """The parent writes a segment; two fork workers map and read it, close() it and exit. The segment is the
    parent's (its VmHWM holds it); a reader's VmHWM holds it too, though its shared pages are read after close()
    has unmapped it: it must not count as the reader's own, once per reader."""
    from multiprocessing import shared_memory

    segment = shared_memory.SharedMemory(create=True, size=128 * MiB)
    try:
        for i in range(0, segment.size, 4096):
            segment.buf[i] = 1
        ctx = mp.get_context("fork")
        pipes = [ctx.Pipe() for _ in range(2)]
        meter.start("phase")
        procs = [ctx.Process(target=_read_segment, args=(segment.name, there, stay)) for _, there in pipes]
        for proc in procs:
            proc.start()
        for here, _ in pipes:
            assert here.recv() == 128 * MiB // 4096
        for here, _ in pipes:
            here.send("go")
        for proc in procs:
            proc.join()
        record = meter.stop()
    finally:
        segment.close()
        segment.unlink()
    pids = [proc.pid for proc in procs]
    assert all(one(record, pid).hwm > 128 * MiB for pid in pids), record.tree  # each mapped the whole segment
    assert added(record, *pids) <= 2 * SLACK, record.tree
    others = sum(d.private_peak for d in record.tree.detail if d.pid not in (*pids, os.getpid()))
    assert record.ram_tree_peak - record.ram_peak - others <= 2 * SLACK + 8 * MiB, record.tree


def _fill_segment(name: str) -> None:
    from multiprocessing import shared_memory

    segment = shared_memory.SharedMemory(name=name)
    for i in range(0, segment.size, 4096):
        segment.buf[i] = 1  # its pages, mapped by this process alone: the parent never touches them
    time.sleep(0.3)
    segment.close()


def test_a_segment_only_one_worker_maps_counts_as_its_own(meter):
    """A worker fills a segment no other process maps, close()s it and exits: its pages were its own while it
    mapped them (and stay in /dev/shm), so the worker's last window holds them once."""
    from multiprocessing import shared_memory

    segment = shared_memory.SharedMemory(create=True, size=128 * MiB)
    try:
        ctx = mp.get_context("fork")
        meter.start("phase")
        proc = ctx.Process(target=_fill_segment, args=(segment.name,))
        proc.start()
        proc.join()
        record = meter.stop()
    finally:
        segment.close()
        segment.unlink()
    assert 128 * MiB <= added(record, proc.pid) <= 128 * MiB + SLACK, record.tree


def test_an_exit_report_subtracts_the_segment_in_the_share_read_when_it_was_mapped():
    """The race the tree catalogue met (shm_readers, 1 run in 20): a reader's last poll came after its close(), and
    read its share of shared memory from the few KiB of semaphores it still mapped (0.2); its exit report, taken
    before that poll's reset, then subtracted the 300 MiB segment in that share, 60 MiB, and counted 240 MiB as the
    reader's own. Each reset keeps the share read with its RssShmem, and the report uses the one of its window."""
    reader = tree.Descendant(pid=1, ppid=0, start=0)
    reader.window, reader.shared = 316 * MiB, 14 * MiB
    reader.shmem_base_before, reader.shmem_before_share = 300 * MiB, 1.0  # the reset before close(): mapped by 3
    reader.shmem_base, reader.shmem_base_share = 0, 0.2  # the reset after it: the semaphores' share
    reader.shmem_share = 0.2
    report = tree.ExitReport(pid=1, hwm=316 * MiB, shared=14 * MiB, rss=16 * MiB, shmem=20 * 1024)
    assert reader.take_report(report, now=1.0) <= 3 * MiB  # what it holds of its own at its end


def test_a_share_read_while_a_close_unmaps_the_segment_is_not_kept(monkeypatch):
    """The race the unit suite met under xdist (1 run in 4): a periodic re-read of a reader's shared pages walked its
    page tables while its close() unmapped the 128 MiB segment (RssShmem 128 MiB before the walk, 74 MiB after), and
    paired the walk's Pss_Shmem with the lower RssShmem: a share of 0.82, where the segment was mapped by all three
    processes. The next poll, after the close(), subtracted the segment in that share and counted 22 MiB of it as the
    reader's own. A walk while RssShmem moves keeps the last steady read's share."""
    from gpu_budget.measure.procfs import Sharing, Status

    reader = tree.Descendant(pid=1, ppid=0, start=0)
    reader.shmem_share, reader.shared_shmem = 1.0, 128 * MiB  # read while the segment was mapped, by all three
    around = iter([Status(689 * MiB, 689 * MiB, None, None, 128 * MiB), Status(689 * MiB, 635 * MiB, None, None, 74 * MiB)])
    monkeypatch.setattr(tree, "status", lambda pid: next(around))
    monkeypatch.setattr(tree, "read_faults", lambda pid: 0)
    monkeypatch.setattr(tree, "read_sharing", lambda pid: Sharing(shared=620 * MiB, pss_shmem=61 * MiB))
    assert reader._read_shared(now=1.0)
    assert reader.shared_shmem == 74 * MiB and reader.shmem_share == 1.0
    steady = iter([Status(689 * MiB, 689 * MiB, None, None, 128 * MiB)] * 2)  # a walk with the segment held still
    monkeypatch.setattr(tree, "status", lambda pid: next(steady))
    monkeypatch.setattr(tree, "read_sharing", lambda pid: Sharing(shared=685 * MiB, pss_shmem=96 * MiB))
    assert reader._read_shared(now=2.0) and reader.shmem_share == 0.5  # 2 x (128 - 96) of 128 shared: updated


HOLD_SCRIPT = 'import sys\nblock = b"\\x01" * (64 << 20)\nprint("held", flush=True)\nsys.stdin.read()\n'


@pytest.mark.parametrize("whole", [True, False])
def test_a_process_gone_before_the_phases_first_read_counts_what_it_held_as_the_phase_began(whole):
    """A command killed right after it marks a step: the phase ends within one poll, its process read as gone
    before any read in the phase. It held its pages as the phase began: the phase says so, not 0 B."""
    procs = tree.ProcessTree(count_root=False)  # no thread: every read is the test's own
    proc = subprocess.Popen([sys.executable, "-c", HOLD_SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"held\n"
        if whole:
            procs.count_whole(proc.pid)
        procs.poll()
        procs.phase_start()
    finally:
        proc.kill()
        proc.wait()
    reading = procs.phase_end()
    assert reading.exited == 1
    if whole:
        assert reading.whole[proc.pid] >= 64 * MiB, reading
    # the worker's other descendants (a forkserver an earlier test started) may add to both sums: at least it, then
    assert reading.private >= 64 * MiB - SLACK and reading.peak_sum >= 64 * MiB - SLACK, reading


def test_a_rank_held_as_the_command_was_started_with_is_inherited_not_a_launchers():
    """A RANK the session ran under, passed down unchanged (through a shell, to the launcher it runs), is no rank; the
    same RANK a launcher sets beside its other launch variables is one."""
    from gpu_budget.measure.procfs import launch_vars, rank_in, read_environ

    def read_rank(pid, inherited=None):
        return rank_in(read_environ(pid), inherited)

    session = {**os.environ, "RANK": "0"}
    launched = {**session, "LOCAL_RANK": "0", "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "x"}
    procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"], env=env)
             for env in (session, launched)]
    try:
        time.sleep(0.2)  # exec'd: its environ is its own
        assert [read_rank(p.pid) for p in procs] == [0, 0]
        assert [read_rank(p.pid, launch_vars(session)) for p in procs] == [None, 0]
    finally:
        for p in procs:
            p.kill()
            p.wait()
