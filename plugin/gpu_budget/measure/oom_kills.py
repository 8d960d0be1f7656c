"""The kernel's own count of OOM kills, read before and after a command case: a process the OOM killer ended (SIGKILL)
under a script that went on and exited 0 leaves no other trace the gate can trust.

A SIGKILL of a process of the case is what the OOM killer sends, but a script
may kill its own helpers so on purpose; only the kernel's counter tells the two
apart. Read in this order: cgroup v2's memory.events of this process's cgroup
(its subtree's kills), cgroup v1's memory.oom_control of its memory cgroup
(kernel 4.13+), else /proc/vmstat's, the whole machine's (a kill elsewhere
counts too, so the case only fails where a process of its own ended as well).
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class OomKills:
    """One read of the counter: the file it came from, whether it counts this cgroup's kills or the machine's."""

    path: str
    kills: int
    machine: bool


def _counter(path: str) -> int | None:
    """The `oom_kill N` line's N in `path` (memory.events, memory.oom_control, vmstat), or None where unreadable."""
    try:
        with open(path) as fh:
            for line in fh:
                name, _, value = line.partition(" ")
                if name == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        return None
    return None


def _cgroup_files(proc: str, cgroups: str) -> list[str]:
    """The counter files of this process's cgroups, v2's first; a path missing under the mount (a cgroup namespace
    mounts the process's own cgroup as the root) falls back to the mount's root."""
    try:
        with open(os.path.join(proc, "self", "cgroup")) as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    v2, v1 = [], []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        rel = path.lstrip("/")
        if controllers == "":
            for mount in (os.path.join(cgroups, "unified"), cgroups):
                v2 += [os.path.join(mount, rel, "memory.events"), os.path.join(mount, "memory.events")]
        elif "memory" in controllers.split(","):
            mount = os.path.join(cgroups, "memory")
            v1 += [os.path.join(mount, rel, "memory.oom_control"), os.path.join(mount, "memory.oom_control")]
    return v2 + v1


def read(proc: str = "/proc", cgroups: str = "/sys/fs/cgroup") -> OomKills | None:
    """The OOM kills the kernel has counted so far for this process's cgroup, else for the machine; None where no
    counter is readable (an older kernel, a sandbox without /proc/vmstat)."""
    for path in _cgroup_files(proc, cgroups):
        kills = _counter(path)
        if kills is not None:
            return OomKills(path, kills, machine=False)
    path = os.path.join(proc, "vmstat")
    kills = _counter(path)
    return None if kills is None else OomKills(path, kills, machine=True)


def rose(before: OomKills | None, after: OomKills | None) -> int:
    """How many OOM kills the kernel counted between two reads of the same counter (0 where either is missing)."""
    if before is None or after is None or before.path != after.path:
        return 0
    return max(0, after.kills - before.kills)
