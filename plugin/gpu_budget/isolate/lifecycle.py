"""A measured run's processes from birth to end: kept in the run's tree, and none left behind.

The measuring child becomes a subreaper, so a process of the run whose parent
exits (a daemonising helper) re-parents to it and stays its descendant; at the
run's end whatever is left is found by a scan of /proc and killed, until
nothing is left (one may fork as the others die); a command's helpers first
get a short grace to end on their own (await_descendants). Measuring the tree is
measure/tree.py's; this is the tree's lifecycle.

A process the gate starts also ends with the one that started it (its
owner): a measured child watches the session that forked it, and an xdist
worker, an environment's helper, a --gpu-budget-against side's session and a
bisect step watch the process named in GPU_BUDGET_OWNER. When the owner is
gone (SIGKILLed, OOM-killed: nothing ran its cleanup), the watcher kills its
own descendants and exits, so no measured case runs on for nobody.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable

from gpu_budget.measure.procfs import Family, read_family, read_stat

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make orphaned descendants (a helper whose parent exited) re-parent to this process, so they stay in its tree."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (children, and theirs), found by a scan of /proc."""
    return _scan(pid)[0]


def _scan(pid: int) -> tuple[list[int], dict[int, set[int]]]:
    """`pid`'s live descendants, and its zombie descendants by process group (group -> zombie pids)."""
    children: dict[int, list[tuple[int, Family]]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            family = read_family(entry.name)
            if family is not None:
                children.setdefault(family.ppid, []).append((int(entry.name), family))
    live: list[int] = []
    zombies: dict[int, set[int]] = {}
    todo = [pid]
    while todo:
        for child, family in children.get(todo.pop(), []):
            if family.zombie:
                zombies.setdefault(family.pgrp, set()).add(child)
            else:
                live.append(child)
                todo.append(child)
    return live, zombies


def _own_groups() -> set[int]:
    """The process groups of this process and of every ancestor: never killed as a descendant's."""
    groups, pid = {os.getpgrp()}, os.getpid()
    while pid > 1:
        family = read_family(pid)
        if family is None:
            break
        groups.add(family.pgrp)
        pid = family.ppid
    return groups


def await_descendants(pid: int, seconds: float, wait: Callable[[float], object], interval: float = 0.02) -> list[int]:
    """Give `pid`'s descendants up to `seconds` to end on their own, calling wait(at most `interval`) between scans
    (a caller serves what they send meanwhile); those still running then. A helper that ends on the EOF of a pipe
    its parent held (multiprocessing's resource tracker, its forkserver) is gone within milliseconds of it."""
    deadline = time.monotonic() + seconds
    while True:
        left = descendants(pid)
        remaining = deadline - time.monotonic()
        if not left or remaining <= 0:
            return left
        wait(min(interval, remaining))


def kill_descendants(pid: int, rounds: int = 20) -> list[int]:
    """SIGKILL every descendant of `pid`, again until none is left (one may fork as the others die); the pids killed.

    Called while `pid` is alive: once it is gone its orphans re-parent away and
    can no longer be found as its descendants (a setsid daemon escapes a kill
    of the process group, not this). A process that forks and exits over and
    over in a group of its own is a zombie each time a scan reads it, its live
    successor born after /proc was listed: so the group of every zombie
    descendant (not this process's group or an ancestor's) is killed too, at
    once, as a fork keeps it. A group is counted killed (its id among the
    pids) only where a zombie of it appears that the scan before had not seen,
    so a child that merely ended unreaped counts nothing.
    """
    killed: list[int] = []
    protected = _own_groups()
    seen: dict[int, set[int]] | None = None
    for _ in range(rounds):
        found, zombies = _scan(pid)
        groups = {group: pids for group, pids in zombies.items() if group not in protected}
        grew = [group for group, pids in groups.items()
                if seen is not None and pids - seen.get(group, pids) - set(killed)]  # not one this call killed
        killed += grew
        if not found and not grew and (seen is not None or not groups):
            break
        seen = groups
        for child in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
                killed.append(child)
        for group in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        time.sleep(0.01)
    return sorted(set(killed))


def outlive_hangup() -> None:
    """Let this process (a measured child, the leader of a process group of its own) live through a SIGHUP: once its
    parent (the forkserver) is gone, its group is orphaned, and where that group holds a stopped process (a job
    stopped by SIGSTOP) the kernel sends it SIGHUP, which would end the child at once, its descendants never ended (a
    daemon in a session of its own then runs on under init). Its owner's watch (end_with) or the session ends it and
    them instead. A handler, not SIG_IGN: a program it execs starts with the default again, and a process it forks
    gets the default back (os.register_at_fork)."""
    signal.signal(signal.SIGHUP, _hung_up)
    os.register_at_fork(after_in_child=_default_hangup)


def _hung_up(signum: int, frame: object) -> None:
    """SIGHUP in a measured child: nothing to do; what ends it is its owner's end."""


def _default_hangup() -> None:
    with contextlib.suppress(ValueError):  # a fork from another thread than the main one keeps the handler
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


def interrupt_on_sigterm() -> object | None:
    """Make SIGTERM (a CI job's timeout, a plain `kill`) end this session as Ctrl-C does, by a KeyboardInterrupt: its
    measured child is then ended and its temp files removed, where Python's default would die at once and leave
    them. The handler it replaced, for restore_sigterm(); None where it changed nothing (a handler of someone else's
    is kept, and only the main thread may set one)."""
    global _ending
    try:
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return None
        signal.signal(signal.SIGTERM, _interrupted)
    except ValueError:  # not the main thread
        return None
    _ending = False
    return signal.SIG_DFL


_ending = False  # the session is ending on an interrupt already: a SIGTERM now is not one more


def ending() -> None:
    """Say that the session is ending on an interrupt (pytest reported it): a SIGTERM from now on lets it end."""
    global _ending
    _ending = True


def _interrupted(signum: int, frame: object) -> None:
    """SIGTERM as Ctrl-C, once: one that comes while the session already ends on an interrupt (a CI job's SIGTERM
    after its SIGINT, a second `kill`) is let be, since a KeyboardInterrupt raised inside that ending cuts its
    cleanup short (a measured child left unreaped, which multiprocessing's exit then waits for forever)."""
    global _ending
    if _ending or isinstance(sys.exc_info()[1], KeyboardInterrupt):
        _ending = True
        return
    _ending = True
    raise KeyboardInterrupt(f"ended by {signal.Signals(signum).name}")


def pass_on_sigterm(pids: list[int]) -> list[int]:
    """Send SIGTERM to each of `pids` that is still this process's child (a pid reused since is another's process):
    a SIGTERM or SIGINT sent to this process alone (a CI job's timeout or cancel, `kill PID`) reaches the processes it
    runs sessions in (xdist's workers), which end their measured children as it does; one that a terminal's Ctrl-C
    reached too takes the SIGTERM as part of that ending (_interrupted). The pids signalled."""
    sent = []
    for pid in pids:
        family = read_family(pid)
        if family is not None and family.ppid == os.getpid() and not family.zombie:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
                sent.append(pid)
    return sent


def restore_sigterm(previous: object | None) -> None:
    """Undo interrupt_on_sigterm(): an in-process session (pytester) leaves the process's handlers as it found them."""
    if previous is not None:
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGTERM, previous)


def take_over() -> tuple[str | None, object | None]:
    """A gated session's start: adopt() its owner, and interrupt_on_sigterm(); what they replaced, for hand_back()."""
    return adopt(), interrupt_on_sigterm()


def hand_back(before: tuple[str | None, object | None]) -> None:
    """Undo take_over()."""
    release(before[0])
    restore_sigterm(before[1])


OWNER_ENV = "GPU_BUDGET_OWNER"  # "PID:START" of the process that started this one: it ends with that process
OWNER_GONE = 255  # the exit code of a process whose owner went first (git bisect run: abort, not skip)
_POLL_SECONDS = 0.25
_watched: set[int] = set()


def owner_of(pid: int) -> str:
    """The OWNER_ENV value naming process `pid`: "PID:START", the start telling a reused pid apart; the bare pid
    where it is gone already (an owner gone, to end_with and running)."""
    stat = read_stat(pid)
    return str(pid) if stat is None else f"{pid}:{stat.start}"


def claim() -> str | None:
    """Name this process the owner of what it starts from now on; the value it replaced, for release()."""
    previous = os.environ.get(OWNER_ENV)
    os.environ[OWNER_ENV] = owner_of(os.getpid())
    return previous


def adopt() -> str | None:
    """End with the owner this process was started by (OWNER_ENV, if any), and own what it starts from now on; the
    value it replaced, for release()."""
    end_with(os.environ.get(OWNER_ENV))
    return claim()


def release(previous: str | None) -> None:
    """Undo claim(): an in-process session (pytester) leaves the environment as it found it."""
    if previous is None:
        os.environ.pop(OWNER_ENV, None)
    else:
        os.environ[OWNER_ENV] = previous


def running(owner: str) -> bool:
    """Whether the process an OWNER_ENV value names ("PID:START", or a bare pid) still runs."""
    pid, start = _parse(owner)
    return _alive(pid, start)


def _parse(owner: str) -> tuple[int, str]:
    pid_text, _, start = owner.partition(":")
    try:
        return int(pid_text), start
    except ValueError:
        raise ValueError(f"{OWNER_ENV}={owner!r}: expected PID:START (a process id and its start time)") from None


def end_with(owner: str | None) -> bool:
    """Watch the process `owner` names ("PID:START", or a bare pid) on a daemon thread; once it is gone, SIGKILL
    this process's descendants and exit with OWNER_GONE. False where there is nothing to watch (no owner, this
    process itself, already watched); a value that names no such process is an owner already gone."""
    if not owner:
        return False
    pid, start = _parse(owner)
    if pid == os.getpid() or pid in _watched:
        return False
    _watched.add(pid)
    threading.Thread(target=_end_when_gone, args=(pid, start, owner), daemon=True, name="gpu-budget-owner").start()
    return True


def _end_when_gone(pid: int, start: str, owner: str) -> None:
    _wait_gone(pid, start)
    try:  # said where it can be: a stderr piped to the owner that is gone raises (BrokenPipeError), and the end must come
        print(f"gpu-budget: the process that started this one ({OWNER_ENV}={owner}) has ended; ending pid "
              f"{os.getpid()} and what it started", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    for _ in range(3):  # again after a pause: another thread of this process may be starting one meanwhile
        kill_descendants(os.getpid())
        time.sleep(0.05)
    os._exit(OWNER_GONE)


def _wait_gone(pid: int, start: str) -> None:
    """Return once process `pid` (started at `start`, where given) has exited: at once where it already has."""
    try:
        handle = os.pidfd_open(pid)  # readable once the process exits: no polling, no reused pid
    except ProcessLookupError:
        return
    except (AttributeError, OSError):  # a kernel before 5.3: poll
        handle = None
    try:
        if not _alive(pid, start):  # exited, or the pid was reused before the watch began
            return
        if handle is not None:
            select.select([handle], [], [])
            return
        while _alive(pid, start):
            time.sleep(_POLL_SECONDS)
    finally:
        if handle is not None:
            os.close(handle)


def _alive(pid: int, start: str) -> bool:
    stat = read_stat(pid)
    return stat is not None and (not start or str(stat.start) == start)
