"""The host memory a measured process can hold: the host's RAM, or its cgroup's memory limit where that is lower.

A child forked by the gate runs in the cgroup of the process that started it
(the probe child is its sibling), and the kernel kills or refuses it past the
lowest limit of that cgroup and its ancestors (cgroup v2's `memory.max`, v1's
`memory.limit_in_bytes`). The RSS the gate gates never exceeds that memory, so
a RAM budget above it cannot be reached on this host, and an out-of-memory
death below it shows only that the host is small (judge/compare.py).
"""

from __future__ import annotations

from pathlib import Path

_UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as a page-rounded 2**63 - 1


def host_memory(proc: Path = Path("/proc"), cgroups: Path = Path("/sys/fs/cgroup")) -> int | None:
    """Bytes this process's children can hold: MemTotal, lowered to the cgroup's limit; None off Linux."""
    total = _mem_total(proc / "meminfo")
    limits = [limit for limit in _cgroup_limits(proc / "self" / "cgroup", cgroups) if limit < _UNLIMITED]
    found = [figure for figure in (total, *limits) if figure is not None]
    return min(found) if found else None


def _mem_total(meminfo: Path) -> int | None:
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_limits(membership: Path, cgroups: Path) -> list[int]:
    """The memory limits of this process's cgroup and its ancestors, v2 and v1 (the mounted hierarchy's view)."""
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            out += _limits_up(cgroups, path, "memory.max")
        elif "memory" in controllers.split(","):
            out += _limits_up(cgroups / "memory", path, "memory.limit_in_bytes")
    return out


def _limits_up(mount: Path, path: str, name: str) -> list[int]:
    """The limit file `name` of the cgroup at `path` under `mount` and of each ancestor up to the mount's root."""
    out, folder = [], mount / path.strip("/")
    while True:
        try:
            text = (folder / name).read_text().strip()
            out += [] if text == "max" else [int(text)]
        except (OSError, ValueError):
            pass
        if folder == mount or mount not in folder.parents:
            return out
        folder = folder.parent
