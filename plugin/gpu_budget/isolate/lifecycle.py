"""A measured run's processes from birth to end: kept in the run's tree, and none left behind.

The measuring child becomes a subreaper, so a process of the run whose parent
exits (a daemonising helper) re-parents to it and stays its descendant; at the
run's end whatever is left is found by a scan of /proc and killed, until
nothing is left (one may fork as the others die). Measuring the tree is
measure/tree.py's; this is the tree's lifecycle.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time

from gpu_budget.measure.procfs import read_stat

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make orphaned descendants (a helper whose parent exited) re-parent to this process, so they stay in its tree."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (children, and theirs), found by a scan of /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            stat = read_stat(entry.name)
            if stat is not None:
                children.setdefault(stat[0], []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_descendants(pid: int, rounds: int = 20) -> list[int]:
    """SIGKILL every descendant of `pid`, again until none is left (one may fork as the others die); the pids killed.

    Called while `pid` is alive: once it is gone its orphans re-parent away and
    can no longer be found as its descendants (a setsid daemon escapes a kill
    of the process group, not this).
    """
    killed: list[int] = []
    for _ in range(rounds):
        found = descendants(pid)
        if not found:
            break
        for child in found:
            try:
                os.kill(child, signal.SIGKILL)
                killed.append(child)
            except ProcessLookupError:
                pass
        time.sleep(0.01)
    return sorted(set(killed))
