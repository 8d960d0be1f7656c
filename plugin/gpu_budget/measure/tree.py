"""The host RAM a measured process's descendants add: DataLoader workers, tokenizer or FunASR subprocesses, helpers.

The main process's VmHWM does not see its children. Each descendant's own
VmHWM does, exactly, but a forked worker starts with its parent's pages in its
page tables: summing VmHWM counts the parent once per fork worker (an upper
bound that can sit gigabytes above the truth). So each descendant adds its
*private* figure: its VmHWM less the pages it shares with other processes
(smaps_rollup's Shared_Clean + Shared_Dirty: pages inherited from the parent
and not yet copied, library text mapped by the parent too). Copy-on-write
copies (a refcount write to an inherited object copies its page) move pages
from shared to private without changing RSS, so they are counted when the
shared figure is re-read. A process marked *whole* (a command's own process,
which exec'd and shares no memory of its parent's) counts its VmHWM in full.

The figure is the **peak over time of the summed tree**: a poller thread
reads every descendant's VmHWM each `interval` and resets it right after
(clear_refs), so each read is that process's exact peak within one window
between two polls, and the window's sum bounds the tree from above for that
window. The phase's figure is the largest window sum: processes that never
live in the same window are never added (ten sequential subprocesses are one
subprocess's peak, not ten), processes alive together are. The sum of each
process's own peak in the phase is kept beside it as the loose upper bound.
Errors (docs/process-tree.md): a window holds the peaks of all its processes
even when they peak at different moments within it (10 ms); what a process
does after its last read and before it exits is lost unless it reports its
own final window as it exits (forked multiprocessing children, and every
Python process of a command tree, do); a spike allocated and freed within the
microseconds between a read and its reset is lost.

Shared memory (a multiprocessing.shared_memory segment, a tensor's share_memory_(), a /dev/shm file mapped)
is a page like any other here: shared where another process maps it too, a process's own where it alone does.
A descendant that unmaps a segment it shared (close()) still holds it in the VmHWM of that window, though its
shared pages no longer do: the RssShmem it mapped as the window began and no longer does, in the share other
processes mapped too (shmem_share), is subtracted as well (exit reports carry RSS and RssShmem for it), and a
move of RssShmem by RESHARE_BYTES has the shared pages read again at once, like a file mapping's. A file it
unmaps (a memmap dropped) likewise: the file pages it unmapped that its shared pages fell by (unshared_files; exit
reports carry RssFile).

A zombie's /proc holds no memory figures, and wait4's ru_maxrss of a spawned
worker is its parent's pre-exec peak (measured, see benchmarks/RESULTS.md), so
neither stands in for the last window. smaps_rollup walks the page tables
(about 24 us per MiB mapped here), so it is read when a descendant is first
seen, when its RSS moved since the last read, at most every `shared_every`
otherwise, and at every phase end; a window between two such reads uses the
last one (copies made since are counted at the next).

Linux only (/proc); elsewhere `available()` is False and the tree is not measured.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from signal import SIGKILL

from gpu_budget.measure.held_tmpfs import held, tmpfs_mounts
from gpu_budget.measure.procfs import (
    Sharing,
    Stat,
    attempt_in,
    exit_signal,
    forked_not_execd,
    launch_vars,
    rank_in,
    read_cmdline,
    read_environ,
    read_faults,
    read_shared,
    read_sharing,
    read_stat,
    reset_hwm,
    status,
)
from gpu_budget.model.figures import ProcessDetail, RankTree, TreeReading
from gpu_budget.units import MiB


@dataclass(frozen=True)
class Running:
    """The open phase's figures as one poll left them, for a child to stream before it is killed: the tree's
    running figure, each rank's (its own process's peak, its processes' largest sum), the main process's peak in
    the phase (None: not found yet), and which phase they are of (phase_start()s so far: a poll read just before a
    phase began is not the new phase's)."""

    total: int
    ranks: dict[int, tuple[int, int]]
    main: int | None
    phase: int


OnPoll = Callable[[Running], None]

# How the tree figure is made, named in every summary that holds one (its error bound: benchmarks/RESULTS.md 1b).
TREE_METHOD = "vmhwm+peak-of-summed-descendants"
DETAIL_MAX = 16  # descendants listed per phase (largest first); the sums count them all
RESHARE_BYTES = 4 * MiB  # a file or shared-memory mapping's move this large since the last smaps read: read it again
EXEC_DROP = 1 * MiB  # a VmHWM read this far below the previous one: a new memory image (exec)
# a fork's rank (or one whose environ reads empty: an exec under way) is looked for at every poll this long after
# its image was found, then this often while it stays the fork: a launcher's fork may exec a rank's process late
RANK_WATCH_S = 2.0
RANK_RECHECK_S = 0.25
SHARED_COST_FACTOR = 20  # periodic smaps reads of one process take at most 1/20 of the time between them


def available() -> bool:
    return os.path.exists("/proc/self/smaps_rollup") and os.path.exists("/proc/self/clear_refs")


_KCMP_VM, _SYS_KCMP = 1, {"x86_64": 312, "aarch64": 272}.get(os.uname().machine)


def borrows_parent_memory(pid: int, ppid: int) -> bool:
    """True while a vfork()ed child runs in its parent's memory until it execs (Python's subprocess does so for
    milliseconds): its /proc figures are the parent's then, and must not be counted as the child's."""
    if _SYS_KCMP is None or not forked_not_execd(pid):
        return False
    try:  # kcmp(KCMP_VM) is 0 when both use one memory map
        return ctypes.CDLL(None, use_errno=True).syscall(_SYS_KCMP, ppid, pid, _KCMP_VM, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _report_exit(fd: int) -> None:
    """In a forked multiprocessing child, as the last thing before it exits: its VmHWM, shared pages, RSS,
    shared-memory pages (RssShmem) and file pages (RssFile), down the pipe."""
    own, shared = status("self"), read_shared("self")
    if own is not None and shared is not None:
        try:
            os.write(fd, f"{os.getpid()} {own.hwm} {shared} {own.rss} {own.rss_shmem or 0} {own.rss_file or 0}\n".encode())
        except OSError:  # the pipe is full (nobody read it): the polled figure stands
            pass


def _arm_exit_report(reports: ExitReports) -> None:
    """multiprocessing runs this in every child it forks, after clearing the parent's finalizers."""
    from multiprocessing import util

    util.Finalize(reports, _report_exit, args=(reports.write_fd,), exitpriority=-1000)  # after the child's own children


@dataclass(frozen=True)
class ExitReport:
    """A descendant's last figures, sent as it exits: its VmHWM since the last read, its shared pages (None: not
    read), the rank it ran under (None: none, or not said), and its RSS, RssShmem and RssFile as it exits (None: not
    said)."""

    pid: int
    hwm: int
    shared: int | None
    rank: int | None = None
    rss: int | None = None
    shmem: int | None = None
    file: int | None = None


class ExitReports:
    """The last figures descendants send as they exit (ExitReport).

    Forked multiprocessing children write theirs down a pipe (armed by arm());
    a command's Python processes send theirs over the mark socket (add()).
    """

    def __init__(self) -> None:
        self._pending: list[ExitReport] = []
        self._read_fd: int | None = None
        self.write_fd: int | None = None

    def arm(self) -> None:
        """Have every child multiprocessing forks from here report as it exits (exact, however short-lived).

        Spawned children and plain os.fork() children do not run it: their figure is the last poll's.
        """
        from multiprocessing import util

        self._read_fd, self.write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        os.set_blocking(self.write_fd, False)  # a child never blocks on a full pipe; its report is dropped
        util.register_after_fork(self, _arm_exit_report)

    def add(self, pid: int, hwm: int, shared: int | None, rank: int | None = None, rss: int | None = None,
            shmem: int | None = None, file: int | None = None) -> None:
        self._pending.append(ExitReport(pid, hwm, shared, rank, rss, shmem, file))

    def take(self) -> list[ExitReport]:
        """Every report that arrived since the last take(), the pipe's included."""
        if self._read_fd is not None:
            data = b""
            while True:
                try:
                    chunk = os.read(self._read_fd, 65536)
                except BlockingIOError:
                    break
                if not chunk:
                    break
                data += chunk
            for line in data.decode().splitlines():
                pid, hwm, shared, rss, shmem, file = map(int, line.split())
                self._pending.append(ExitReport(pid, hwm, shared, None, rss, shmem, file))
        taken, self._pending = self._pending, []
        return taken

    def apply(self, procs: dict[int, Descendant], whole: set[int], now: float) -> dict[int | None, int]:
        """Apply the reports taken now to `procs` (one born and gone between two polls joins them, counted whole where
        `whole` holds it); the sum of their last windows' contributions, by rank (None: no rank)."""
        added: dict[int | None, int] = {}
        for report in self.take():
            p = procs.get(report.pid)
            if p is not None and p.reported:  # one report per process: a second would count its last window twice
                continue
            if p is None:  # born and gone between two polls
                p = procs[report.pid] = Descendant(report.pid, 0, 0, whole=report.pid in whole, rank=report.rank)
            added[p.rank] = added.get(p.rank, 0) + p.take_report(report, now)
        return added


def has_children() -> bool:
    """Whether this process has a child (running or a zombie), asked of the kernel without reaping any."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


@dataclass
class Descendant:
    """One descendant, as far as this phase saw it."""

    pid: int
    ppid: int
    start: int  # start time (clock ticks since boot): with the pid, tells a reused pid apart
    whole: bool = False  # counted in full (a command's own process), not less its shared pages
    window: int = 0  # VmHWM at the last read: its peak since the read before (each read resets it)
    hwm: int = 0  # the largest window in this phase
    peak: int = 0  # the largest contribution (window less shared pages) in this phase
    last_rss: int = 0  # at the last read; a VmHWM below it means a new memory image (exec)
    execs: int = 0  # exec()s seen (a spawned worker: fork then exec)
    seen: bool = False  # read at least once
    shared: int | None = None  # at the last smaps_rollup read
    shared_mapped: int = 0  # RssFile at that read (a move past RESHARE_BYTES triggers another)
    shared_shmem: int = 0  # RssShmem around that read, the lower (so does a move past RESHARE_BYTES of it)
    shared_rss: int = 0  # RSS around that read, the lower
    shmem_share: float = 0.0  # of its RssShmem, the share other processes map too, at the last read that saw any
    shmem_base: int = 0  # RssShmem as its VmHWM was last reset: what its next window starts with
    shmem_base_before: int = 0  # ... and at the reset before
    # the share of each of those two that others mapped, as read at that reset: a later read (after a close(), of
    # the few KiB of semaphores left) says nothing of the segment it unmapped
    shmem_base_share: float = 0.0
    shmem_before_share: float = 0.0
    shared_file: int = 0  # RssFile around the last smaps read, the lower
    shared_was: int | None = None  # the shared pages as the last read began (the window before it's)
    file_base: int = 0  # RssFile as its VmHWM was last reset
    file_base_before: int = 0  # ... and at the reset before
    shared_faults: int | None = None  # page faults at that read: none since, nothing can have been copied
    shared_tree: tuple[int, int] | None = None  # the tree's (faults, RSS) at that read: unchanged, no other process
    # copied, freed or left a page this one shared with it
    shared_at: float = 0.0
    shared_cost: float = 0.0  # seconds the last smaps_rollup read took
    alive: bool = True
    born_in_phase: bool = True
    reported: bool = False  # its last window came from its own report at exit (exact)
    rank: int | None = None  # the launcher's RANK it runs under (its own, or its rank's process it descends from)
    rank_root: bool = False  # the rank's own process (the one the launcher started), not one of its workers
    rank_pending: bool = False  # its rank is not settled yet: read once it has exec'd (_settle_rank)
    image_at: float = 0.0  # when this memory image was found (at discovery, again at an exec seen)
    argv: tuple[str, ...] | None = None  # its command line, read as it is first read and at each exec seen
    rank_check_at: float = 0.0  # a pending rank's next look (_settle_rank)

    def contribution(self, hwm: int, unmapped: int = 0, rss: int = 0) -> int:
        """What a VmHWM of this process adds to the tree: all of it for a whole process, else less its shared pages
        (0 while those were never read: gone within one read of appearing) and less `unmapped`, the shared memory
        it shared with others as the window began and has unmapped since (a reader's close() of a segment: its
        VmHWM still holds the segment, its shared pages no longer do), yet never less than it holds of its own now
        (`rss` less its shared pages)."""
        if self.whole:
            return hwm
        return 0 if self.shared is None else max(0, hwm - self.shared - unmapped, rss - self.shared)

    def carry(self) -> int:
        """Enter a new phase with what it holds as the phase begins (its RSS at the phase start's read): one killed
        before the phase's first read (a command dying right after it marks a step) held that much in it, not 0 B."""
        self.hwm, self.born_in_phase = self.last_rss, False
        self.peak = self.contribution(self.last_rss, rss=self.last_rss)
        return self.peak

    def take_report(self, report: ExitReport, now: float) -> int:
        """Its own exit report stands in for a last read: its last window's contribution. That window began at the
        last poll's reset, or at the one before where the report was taken before that reset (its VmHWM then no
        higher than the last poll's): the shared memory it mapped then and no longer does is no longer in its
        shared pages, yet still in its VmHWM."""
        unmapped = 0
        if report.shared is not None:
            earlier = report.hwm <= self.window  # taken before the last poll's reset: its window began at the one before
            if report.shmem is not None:
                began, share = self.shmem_base, self.shmem_base_share
                if earlier and self.shmem_base_before > began:
                    began, share = self.shmem_base_before, self.shmem_before_share
                unmapped = int(max(0, began - report.shmem) * share)
            shared = self.shared_was if earlier else self.shared
            if report.file is not None and shared is not None:
                began = max(self.file_base, self.file_base_before) if earlier else self.file_base
                unmapped += unshared_files(began - report.file, shared - report.shared - unmapped)
            self.shared, self.shared_at = report.shared, now
        self.window, self.hwm, self.alive, self.reported, self.seen = report.hwm, max(self.hwm, report.hwm), False, True, True
        contribution = self.contribution(report.hwm, unmapped, report.rss or 0)
        self.peak = max(self.peak, contribution)
        return contribution

    def read(self, now: float, shared_every: float, shared_too: bool = False,
             tree: Callable[[], tuple[int, int]] | None = None) -> int:
        """Read (and reset) one descendant's VmHWM, and its shared pages when they may have moved; its window's
        contribution (0 when it is gone or has nothing of its own yet)."""
        first = not self.seen
        if first and borrows_parent_memory(self.pid, self.ppid):
            return 0  # nothing of its own yet: read it at the next poll, after its exec
        before = None
        if first and not self.whole:  # before its VmHWM: read after, a short-lived process could be gone and leave them unknown
            before = status(self.pid)
            self._read_shared(now, tree=tree)
        counters = status(self.pid)
        if counters is None:  # exited (or a zombie, whose /proc has no memory figures): its earlier windows stand
            self.alive = False
            return 0
        reset_hwm(self.pid)  # the next read sees the next window's peak only
        self.seen = True
        if before is not None and counters.hwm < before.hwm - EXEC_DROP:
            self._read_shared(now, tree=tree)  # it exec'd between the two reads: those shared pages were the old image's
        # after a reset VmHWM restarts at the RSS of that moment, so only a new memory image (exec) reads below the
        # last RSS; the kernel's RSS counters are per-CPU and read approximately, so a fall within EXEC_DROP is noise
        execd = not first and counters.hwm < self.last_rss - EXEC_DROP
        if execd:
            self.execs += 1
            self.rank_pending = self.rank is None  # a new image may carry a launcher's RANK: read it again
            self.image_at, self.rank_check_at = now, 0.0
        if first or execd:
            self.argv = read_cmdline(self.pid) or self.argv  # gone by the time it is found gone: a zombie has none
        self.window, self.last_rss = counters.hwm, counters.rss
        self.hwm = max(self.hwm, self.window)
        unmapped, rss = 0, counters.rss
        if not self.whole:
            share, shared = self.shmem_share, self.shared  # as this window began: the read below may replace them
            self.shared_was = shared
            self.shmem_base_before, self.shmem_base = self.shmem_base, counters.rss_shmem or 0
            self.file_base_before, self.file_base = self.file_base, counters.rss_file or 0
            if self._maybe_reshare(now, counters.rss_file or 0, counters.rss_shmem or 0, first, execd, shared_too,
                                   shared_every, tree) and not (first or execd):
                # the lower figures around the smaps read: a close() under way unmaps pages while it is read
                unmapped, rss = int(max(0, self.shmem_base_before - self.shared_shmem) * share), self.shared_rss
                unmapped += unshared_files(self.file_base_before - self.shared_file, (shared or 0) - self.shared - unmapped)
            # this reset's share: the read's, where it saw the RssShmem of the reset (a close() after the status
            # read leaves only a few KiB for it to judge), else the one before
            seen = self.shared_shmem >= self.shmem_base - RESHARE_BYTES
            self.shmem_before_share, self.shmem_base_share = self.shmem_base_share, self.shmem_share if seen else share
        contribution = self.contribution(self.window, unmapped, rss)
        self.peak = max(self.peak, contribution)
        return contribution

    def _maybe_reshare(self, now: float, mapped: int, shmem: int, first: bool, execd: bool, shared_too: bool,
                       shared_every: float, tree: Callable[[], tuple[int, int]] | None = None) -> bool:
        """Shared pages move with file mappings (imports), shared-memory mappings (a segment a worker attaches to or
        close()s) and at exec: read at once; and as copy-on-write copies
        and shared-memory batches, which leave RSS alone: read at the phase end and every
        shared_every (or SHARED_COST_FACTOR times what the last read cost), if the process has faulted a page in
        since, or the tree has (`tree`: its faults and RSS): a page this process shares stops being shared when the
        process sharing it copies it (a write), frees it or exits, with no fault in this one. Whether it read them
        again."""
        if first:
            self.shared_mapped = mapped
        if execd or abs(mapped - self.shared_mapped) >= RESHARE_BYTES or abs(shmem - self.shared_shmem) >= RESHARE_BYTES:
            return self._read_shared(now, mapped, tree)
        if shared_too or now - self.shared_at >= max(shared_every, SHARED_COST_FACTOR * self.shared_cost):
            faults = read_faults(self.pid)
            if faults is None or faults != self.shared_faults or (tree is not None and tree() != self.shared_tree):
                return self._read_shared(now, mapped, tree)
        return False

    def _read_shared(self, now: float, mapped: int | None = None,
                     tree: Callable[[], tuple[int, int]] | None = None) -> bool:
        """Read its shared pages (smaps_rollup), with its RSS and RssShmem before and after, keeping the lower of
        each: pages a close() unmaps while the page tables are walked are among those it no longer maps, never
        counted as its own, and pages it maps meanwhile are a move that has the next poll read again. Whether the
        shared pages were read."""
        t0 = time.perf_counter()
        faults = read_faults(self.pid)
        around = None if tree is None else tree()
        before = status(self.pid)
        sharing = read_sharing(self.pid)
        if sharing is None:
            return False
        self.shared, self.shared_at, self.shared_cost, self.shared_faults = sharing.shared, now, time.perf_counter() - t0, faults
        self.shared_tree = around
        around_read = [read for read in (before, status(self.pid)) if read is not None]
        steady = True  # its shared-memory mappings held still while the page tables were walked
        if around_read:
            self.shared_shmem = min(read.rss_shmem or 0 for read in around_read)
            self.shared_file = min(read.rss_file or 0 for read in around_read)
            self.shared_rss = min(read.rss for read in around_read)
            steady = max(read.rss_shmem or 0 for read in around_read) - self.shared_shmem < RESHARE_BYTES
        if self.shared_shmem > 0 and sharing.pss_shmem is not None and steady:
            # a walk during a close() (or a map) pairs a Pss_Shmem of some moment with the RssShmem of another, and
            # reads a share no moment had: the share kept stays the last steady read's
            self.shmem_share = shmem_share(self.shared_shmem, sharing)
        if mapped is not None:
            self.shared_mapped = mapped
        return True


def unshared_files(unmapped: int, unshared: int) -> int:
    """Of the file pages a process unmapped since its window began (a memmap dropped, a safetensors shard closed),
    those it shared with another process: its shared pages fell by them as its RssFile did, though its VmHWM holds
    them still. Shared pages that fell with no file page unmapped were copied or left (a copy-on-write write, the
    other process gone): its own now, subtracted nowhere."""
    return max(0, min(unmapped, unshared))


def shmem_share(shmem: int, sharing: Sharing) -> float:
    """The share of a process's shared-memory pages (`shmem`, its RssShmem) another process maps too. smaps_rollup
    does not split Shared_* by kind, but Pss_Shmem counts a page mapped by n processes 1/n-th: a page of its own adds
    all of it, a shared one at most half, so at most 2 x (RssShmem - Pss_Shmem) are shared: exact where each is
    mapped by two, capped by RssShmem and Shared_* (where S pages are mapped by n > 2 processes, up to S x (1 - 2/n)
    of its own shared-memory pages mapped beside them read as shared too)."""
    return max(0, min(shmem, sharing.shared, 2 * (shmem - (sharing.pss_shmem or 0)))) / shmem


class ProcessTree:
    """Polls the descendants of `root` (default: this process) on a thread; one reading per phase.

    Every poll reads and resets each live descendant's VmHWM (its peak in the
    window since the poll before) and sums the window; phase_start() forgets
    the descendants that exited and starts a new largest window; phase_end()
    reads them all once more (VmHWM and shared pages) and returns the phase's
    TreeReading. `on_poll(Running)` is called from the thread with the open
    phase's running figures (_poll_running), so a child can stream them before
    it is killed. One lock serialises polls, reports and phase boundaries: a
    read is applied in the order it was taken.
    count_root=False: the root is only where the search starts (a measuring
    child running a command), not part of the figure.
    """

    def __init__(self, root: int | None = None, interval: float = 0.01, shared_every: float = 0.25,
                 on_poll: OnPoll | None = None, count_root: bool = True) -> None:
        self.root = root or os.getpid()
        self.interval, self.shared_every, self.on_poll = interval, shared_every, on_poll
        self.count_root = count_root
        self._lock = threading.Lock()
        self._procs: dict[int, Descendant] = {}
        self._foreign: dict[int, int] = {}  # pid -> start time of a process known not to be ours
        self._whole: set[int] = set()  # pids to count in full once found
        self._exits = ExitReports()
        self._last_poll: float | None = None
        self._max_gap = 0.0
        self._peak = 0  # the largest window sum in this phase
        self._rank_peak: dict[int, int] = {}  # rank -> the largest window sum of that rank's processes in this phase
        self.rank_ends: dict[int, float] = {}  # rank -> when its own process was first found gone (perf_counter)
        self.rank_signals: dict[int, int] = {}  # rank -> the signal that ended its own process, where read in time
        self.rank_pids: dict[int, list[int]] = {}  # rank -> its own processes as found (two: the launcher restarted it)
        self.rank_attempts: dict[int, int | None] = {}  # a rank's own process -> its TORCHELASTIC_RESTART_COUNT
        self.vanished = 0  # descendants found gone without an exit report (a kill, os._exit, a program not Python)
        self.sigkilled: dict[int, tuple[str, ...] | None] = {}  # pid -> its command line: found a zombie of SIGKILL
        self._windows = 0
        self._phases = 0  # phase_start()s so far (Running.phase)
        self.main: int | None = None  # the main process, where it is not the root (follow)
        self.inherited: dict[str, str] | None = None  # the launch variables the command was started with (follow)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._own_root = self.root == os.getpid()
        self._mounts = tmpfs_mounts()  # held_tmpfs: read every shared_every (_add_held)
        self._began = time.time() - 1  # file times are the coarse clock's: a file made at once may read earlier
        self._held_at, self._held = float("-inf"), 0  # the last read; the most read held in this phase
        self._unmapped: dict[tuple[int, int], float] = {}  # held files found unmapped -> since when, read after read

    def report_exits(self) -> ProcessTree:
        """Have every child multiprocessing forks from here report its VmHWM as it exits (ExitReports.arm)."""
        self._exits.arm()
        return self

    def count_whole(self, pid: int) -> None:
        """Count this process (once it is found among the descendants) at its full VmHWM: a command's own process."""
        with self._lock:
            self._whole.add(pid)
            if pid in self._procs:
                self._procs[pid].whole = True

    def follow(self, pid: int, environ: Mapping[str, str]) -> None:
        """The command's own process, started with `environ`: counted whole, its peak streamed as the main process's
        (Running.main), and its launch variables those a process inherits rather than gets from a launcher."""
        self.main, self.inherited = pid, launch_vars(environ)
        self.count_whole(pid)

    def claim_rank(self, pid: int, rank: int) -> None:
        """A process of the tree said (through the gate's hook) which RANK it runs under: this settles a rank its
        environ read missed (a fork read before its exec, whose new image did not read small enough to show the
        exec), so a launcher's rank is never lost to that race. A process whose parent has no rank is the rank's own."""
        with self._lock:
            p = self._procs.get(pid)
            if p is None or p.rank is not None or _command_itself(self, p) or inherits_rank(self, pid):
                return
            parent = self._procs.get(p.ppid)
            p.rank, p.rank_pending = rank, False
            if parent is None or parent.rank is None:
                p.rank_root = p.whole = True
                self.rank_pids.setdefault(rank, []).append(pid)
                self.rank_attempts[pid] = attempt_in(read_environ(pid))

    def members(self) -> dict[int, int | None]:
        """The tree's live processes as last polled, each with the rank it runs under (None outside a launcher)."""
        with self._lock:
            return {pid: p.rank for pid, p in self._procs.items() if p.alive}

    def report(self, pid: int, hwm: int, shared: int | None, rank: int | None = None, rss: int | None = None,
               shmem: int | None = None, file: int | None = None) -> None:
        """An exiting descendant's own last figures (its VmHWM since the last reset), applied at the next poll."""
        with self._lock:
            self._exits.add(pid, hwm, shared, rank, rss, shmem, file)

    # -- the thread -------------------------------------------------------------
    def start(self) -> ProcessTree:
        """Poll on a thread until close(), or until nothing holds this tree any more.

        The thread holds the tree weakly: a Meter dropped without close() (a
        test, a user's own loop) stops resetting its descendants' VmHWM once it
        is collected, instead of doing so for the rest of the process's life,
        to every process it starts later.
        """
        self._thread = threading.Thread(target=_poll_while_held, args=(weakref.ref(self), self._stop, self.interval),
                                        name="gpu-budget-tree", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def __del__(self) -> None:
        self._stop.set()

    # -- reading ------------------------------------------------------------------
    def _worth_scanning(self) -> bool:
        if any(p.alive for p in self._procs.values()):
            return True
        return has_children() if self._own_root else True

    def _poll_locked(self, shared_too: bool = False) -> int | None:
        now = time.perf_counter()
        if self._last_poll is not None:
            self._max_gap = max(self._max_gap, now - self._last_poll)
        self._last_poll = now
        sums = self._exits.apply(self._procs, self._whole, now)  # by rank (None: no rank)
        if self._worth_scanning():
            for pid, ppid, start in _discover(self.root, self._procs, self._foreign):
                old = self._procs.get(pid)
                if old is None or (old.start != start and not old.reported):
                    self._procs[pid] = self._adopt(pid, ppid, start, now)
            live = [p for p in self._procs.values() if p.alive]
            tree = _TreeState(live, self.root)
            for p in live:
                if p.rank_pending:
                    _settle_rank(self, p, now)
                sums[p.rank] = sums.get(p.rank, 0) + p.read(now, self.shared_every, shared_too, tree)
                if not p.alive:
                    _found_gone(self, p, now)
        if shared_too or now - self._held_at >= self.shared_every:
            _add_held(self, sums, now)
        window = sum(sums.values())
        for rank, total in sums.items():
            if rank is not None:
                self._rank_peak[rank] = max(self._rank_peak.get(rank, 0), total)
        self._peak = max(self._peak, window)
        self._windows += 1
        if not self.count_root:
            return window
        root = status(self.root)
        return None if root is None else root.hwm + window

    def _adopt(self, pid: int, ppid: int, start: int, now: float) -> Descendant:
        """A new descendant, with the rank it runs under: its parent's, or a launcher's RANK in its environment
        (read once it has exec'd: before, its environ is its parent's). A rank's own process, exec'd by the
        launcher, shares no memory of the launcher's and is counted whole."""
        p = Descendant(pid, ppid, start, whole=pid in self._whole, image_at=now)
        parent = self._procs.get(ppid)
        if parent is not None and parent.rank is not None:
            p.rank = parent.rank
        else:
            p.rank_pending = True
            _settle_rank(self, p, now)
        return p

    def poll(self) -> int | None:
        """One window: find new descendants, read and reset every live one; the running tree figure."""
        with self._lock:
            return self._poll_locked()

    # -- phases -------------------------------------------------------------------
    def phase_start(self) -> None:
        """Forget exited descendants; the live ones carry over, each with what it holds now (Descendant.carry)."""
        with self._lock:
            self._poll_locked()  # descendants born since the last poll are read and reset too
            self._phases += 1
            self._procs = {pid: p for pid, p in self._procs.items() if p.alive}
            carried: dict[int | None, int] = {}
            for p in self._procs.values():
                carried[p.rank] = carried.get(p.rank, 0) + p.carry()
            self._max_gap, self._last_poll, self._peak, self._windows = 0.0, time.perf_counter(), sum(carried.values()), 0
            self._held = 0
            self._rank_peak = {rank: total for rank, total in carried.items() if rank is not None}

    def phase_end(self) -> TreeReading:
        """Read every live descendant once more (VmHWM and shared pages) and sum the phase."""
        with self._lock:
            self._poll_locked(shared_too=True)
            procs = list(self._procs.values())
            gap = self._max_gap if procs else None
            peak, windows, rank_peak = self._peak, self._windows, dict(self._rank_peak)
            reading = _reading(procs, peak, windows, gap, rank_peak)
            return replace(reading, held=self._held, peak_sum=reading.peak_sum + self._held)


def _found_gone(tree: ProcessTree, p: Descendant, now: float) -> None:
    """A descendant found gone at this poll: the signal that ended it, where its parent has not reaped it yet."""
    tree.vanished += 1
    signal = exit_signal(p.pid)  # its parent (a launcher, a script) may not have reaped it yet
    if signal == SIGKILL:
        tree.sigkilled[p.pid] = p.argv
    if p.rank_root and p.rank is not None:
        tree.rank_ends.setdefault(p.rank, now)
        if signal is not None:
            tree.rank_signals.setdefault(p.rank, signal)


def _add_held(tree: ProcessTree, sums: dict[int | None, int], now: float) -> None:
    """Add to this window what the tree's processes hold in tmpfs files none of them maps (held_tmpfs), each to
    its holder's rank (a file made or written since the tree began); the phase keeps the largest such total
    (TreeReading.held). Read every shared_every, and
    counted in the window it was read in only (a descriptor closed since adds nothing to a later one), once every
    read for shared_every found a file unmapped: a munmap under way has the file gone from the maps while its
    pages are still in the RSS, and one done that long ago is in no descendant's window. The root of a runner is
    read over the whole phase: as much of what it holds as its phase peak is above its RSS now is counted there."""
    tree._held_at = now
    procs = {p.pid: p for p in tree._procs.values() if p.alive}
    found = held(list(procs) + ([tree.root] if tree.count_root else []), tree._mounts, tree._began)
    tree._unmapped = {key: tree._unmapped.get(key, now) for key in found}
    by_pid: dict[int, int] = {}
    for key, (pid, size) in found.items():
        if now - tree._unmapped[key] >= tree.shared_every:
            by_pid[pid] = by_pid.get(pid, 0) + size
    for pid, size in by_pid.items():
        p, released = procs.get(pid), 0
        if p is None and (root := status(pid)) is not None:
            released = max(0, root.hwm - root.rss)
        rank = p.rank if p is not None else None
        sums[rank] = sums.get(rank, 0) + max(0, size - released)
    tree._held = max(tree._held, sum(by_pid.values()))


class _TreeState:
    """The tree's summed page faults and RSS (as of the processes' last reads) at one poll, read once, only when a
    descendant's periodic shared-pages check asks (the root's faults included): when it moved since that descendant's last smaps read, another
    process may have copied, freed or left pages they shared (a parent writing its arrays in place after forking an
    idle worker turns the worker's inherited pages into its own), which no fault of the descendant's shows."""

    def __init__(self, live: list[Descendant], root: int) -> None:
        self._live, self._root, self._value = live, root, None

    def __call__(self) -> tuple[int, int]:
        if self._value is None:
            faults = read_faults(self._root) or 0  # a runner's own process: it shares pages with its fork workers
            for p in self._live:
                faults += read_faults(p.pid) or 0
            self._value = (faults, sum(p.last_rss for p in self._live if p.alive))
        return self._value


def _discover(root: int, procs: dict[int, Descendant], foreign: dict[int, int]) -> list[tuple[int, int, int]]:
    """The descendants of `root` not in `procs` yet: (pid, ppid, start), parents before their children. `foreign`
    (pid -> start time of a process known not to be ours) is kept up to date, so each process is read once."""
    listed = {int(e.name) for e in os.scandir("/proc") if e.name.isdigit()}
    for pid in set(foreign) - listed:
        del foreign[pid]
    ours = {root} | {pid for pid, p in procs.items() if p.alive}
    new: dict[int, Stat] = {}
    for pid in sorted(listed - ours - set(foreign) - set(procs)):
        stat = read_stat(pid)
        if stat is not None:
            new[pid] = stat
    found: list[tuple[int, int, int]] = []
    grew = True
    while grew:  # a child may be listed before its parent (pid wrap-around): repeat until nothing joins
        grew = False
        for pid, stat in list(new.items()):
            if stat.ppid in ours:
                found.append((pid, stat.ppid, stat.start))
                ours.add(pid)
                del new[pid]
                grew = True
    for pid, stat in new.items():
        foreign[pid] = stat.start
    return found


def _reading(procs: list[Descendant], peak: int, windows: int, gap: float | None,
             rank_peak: dict[int, int]) -> TreeReading:
    """One phase's TreeReading from its descendants and its largest window sums (the tree's, each rank's)."""
    ranks = {rank: RankTree(ram=max((p.hwm for p in procs if p.rank == rank and p.rank_root), default=0),
                            ram_tree=total, processes=sum(p.rank == rank for p in procs))
             for rank, total in sorted(rank_peak.items())}
    return TreeReading(
            private=peak,
            peak_sum=sum(p.peak for p in procs),
            hwm_sum=sum(p.hwm for p in procs),
            processes=len(procs),
            exited=sum(not p.alive for p in procs),
            reported=sum(p.reported for p in procs),
            unread=sum(not p.seen and not p.alive for p in procs),  # its VmHWM never read: it added nothing
            max_gap=gap,
            windows=windows,
            whole={p.pid: p.hwm for p in procs if p.whole},
            detail=tuple(ProcessDetail(pid=p.pid, ppid=p.ppid, hwm=p.hwm, shared=p.shared, private_peak=p.peak,
                                       whole=p.whole, exited=not p.alive, new=p.born_in_phase, execs=p.execs,
                                       reported=p.reported, rank=p.rank)
                         for p in sorted(procs, key=lambda p: -p.peak)[:DETAIL_MAX]),
            ranks=ranks,
        )


def _settle_rank(tree: ProcessTree, p: Descendant, now: float) -> None:
    """Read a launcher's RANK once the process has exec'd. A fork stays open: a launcher's fork (a shell's
    subshell) may exec a rank's process long after it is first read, into an image no smaller than the fork's
    (no exec Descendant.read can see), and on a loaded machine an exec under way still shows the fork's flag,
    or an empty environ, past a poll or two. So a young image is looked at every poll (RANK_WATCH_S), an old
    fork every RANK_RECHECK_S: a /proc read per look, not one per poll for the life of a worker of no rank."""
    if now <= p.rank_check_at:  # looked at in this poll (adopted), or an old fork looked at lately
        return
    young = now - p.image_at < RANK_WATCH_S
    p.rank_check_at = now if young else now + RANK_RECHECK_S
    if forked_not_execd(p.pid):
        return
    environ = read_environ(p.pid)
    if environ is None and young:
        return  # under exec (its environ not in place yet), or gone: the next poll tells
    p.rank_pending = False
    p.rank = None if _command_itself(tree, p) or environ is None else rank_in(environ, tree.inherited)
    if p.rank is not None:
        p.rank_root = p.whole = True
        tree.rank_pids.setdefault(p.rank, []).append(p.pid)
        tree.rank_attempts[p.pid] = attempt_in(environ)


def _command_itself(tree: ProcessTree, p: Descendant) -> bool:
    """A command's own process (the root here only starts it): the launcher, or the one process, never a rank,
    whatever RANK it inherited (one the session itself ran under, in a job that exports it)."""
    return not tree.count_root and p.ppid == tree.root


def inherits_rank(tree: ProcessTree, pid: int) -> bool:
    """Whether process `pid` holds its RANK as the command was started with (a shell that runs the launcher, the
    launcher it runs: neither is a rank), by its environment, read once it has exec'd; its own claim of a rank
    (the mark socket's messages carry one) does not make it one."""
    if tree.inherited is None or forked_not_execd(pid) or (environ := read_environ(pid)) is None:
        return False
    return rank_in(environ) is not None and rank_in(environ, tree.inherited) is None


def _poll_running(tree: ProcessTree) -> Running | None:
    """A poll, and the open phase's running figures as it left them, read under the same lock (None: the root is
    gone): the tree's figure (the root's VmHWM, where counted, + the window's sum), each rank's (its own process's
    peak, its processes' largest window sum) and the main process's peak (the root's, or count_whole's `main`)."""
    with tree._lock:
        total = tree._poll_locked()
        if total is None:
            return None
        ranks = {rank: (max((p.hwm for p in tree._procs.values() if p.rank == rank and p.rank_root), default=0), peak)
                 for rank, peak in sorted(tree._rank_peak.items())}
        followed = tree._procs.get(tree.main) if tree.main is not None else None
        if tree.count_root:
            root = status(tree.root)
            main = None if root is None else root.hwm
        else:
            main = followed.hwm if followed is not None and followed.seen else None
        return Running(total, ranks, main, tree._phases)


def _poll_while_held(ref: weakref.ref, stop: threading.Event, interval: float) -> None:
    while not stop.wait(interval):
        tree = ref()
        if tree is None:
            return
        try:
            running = _poll_running(tree) if tree.on_poll is not None else tree.poll()
        except Exception:  # noqa: BLE001, S112  a broken read must not kill the measured run; the phase end reads again
            continue
        if isinstance(running, Running):
            tree.on_poll(running)
        del tree  # hold it only while polling
