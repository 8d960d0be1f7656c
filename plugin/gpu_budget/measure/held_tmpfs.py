"""Host RAM in tmpfs files the tree holds open and no process of it maps: no process's RSS holds it.

The kernel charges a tmpfs page (a memfd, a /dev/shm file, a file on a tmpfs
/tmp) to a process's RSS only while that process maps it. A file held by a
descriptor and mapped by nobody is host RAM no VmHWM sees: a DataLoader batch
in flight (its worker made it in shared memory, unmapped it, and holds the
descriptor until the main process takes it: num_workers x prefetch_factor
batches at most), a memfd cache written with write(). So the tree lists its
processes' descriptors and adds the size of each such file (once, however many
hold it) that none of its processes maps: a mapped one's pages are in the RSS
of whoever maps them. Only files made or written since the tree began are
counted: a dataset copied to /dev/shm before the run and read with read() is
not the run's memory. A tmpfs file no process holds open (written and closed)
is still counted by nothing.

A file is left out of the maps as soon as a munmap begins, while the pages
it zaps leave the RSS one by one (on a loaded machine a large segment's close()
was read so, most of it still resident). So the tree counts a file only once
two reads, one `shared_every` apart, found it held and unmapped: by then it
is in no window's VmHWM of its holder either.

Its cost, per read (every shared_every): the descriptors of every process of
the tree, and where a tmpfs file is held, the maps of every process too; eight
processes that imported torch read in 0.1 ms holding no such file and in
5.2 ms each holding a memfd (2797 lines of maps).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable

_MEMFD = "/memfd:"
Held = dict[tuple[int, int], tuple[int, int]]  # (st_dev, st_ino) -> (a pid holding it, its allocated bytes)


def tmpfs_mounts(mountinfo: str = "/proc/self/mountinfo") -> tuple[str, ...]:
    """The mount points of tmpfs file systems ("/dev/shm", a tmpfs /tmp), longest first."""
    points = []
    with contextlib.suppress(OSError), open(mountinfo) as fh:
        for line in fh:
            before, _, after = line.partition(" - ")
            if after.split(" ", 1)[0] == "tmpfs":
                points.append(before.split(" ")[4].replace("\\040", " "))
    return tuple(sorted(points, key=len, reverse=True))


def _on_tmpfs(target: str, mounts: tuple[str, ...]) -> bool:
    return target.startswith(_MEMFD) or any(target.startswith(point.rstrip("/") + "/") for point in mounts)


def _held_files(pids: Iterable[int], mounts: tuple[str, ...], since: float) -> Held:
    """Each tmpfs file held open by one of `pids`, made or changed at `since` or after (time.time()), with the first
    of them found holding it."""
    files: dict[tuple[int, int], tuple[int, int]] = {}
    for pid in pids:
        try:
            names = os.listdir(f"/proc/{pid}/fd")
        except OSError:  # gone, or not ours to read
            continue
        for name in names:
            path = f"/proc/{pid}/fd/{name}"
            try:
                if not _on_tmpfs(os.readlink(path), mounts):
                    continue
                st = os.stat(path)  # the file the descriptor holds, unlinked or not
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_blocks and max(st.st_mtime, st.st_ctime) >= since:
                files.setdefault((st.st_dev, st.st_ino), (pid, st.st_blocks * 512))
    return files


def _mapped(pids: Iterable[int], files: Held) -> set[tuple[int, int]]:
    """Those of `files` that one of `pids` maps (/proc/PID/maps: device major:minor, inode)."""
    inodes = {ino for _, ino in files}
    found: set[tuple[int, int]] = set()
    for pid in pids:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/maps") as fh:
            for line in fh:
                parts = line.split(None, 5)
                if len(parts) < 5 or parts[4] == "0" or int(parts[4]) not in inodes:
                    continue
                major, _, minor = parts[3].partition(":")
                key = (os.makedev(int(major, 16), int(minor, 16)), int(parts[4]))
                if key in files:
                    found.add(key)
    return found


def held(pids: Iterable[int], mounts: tuple[str, ...], since: float = 0.0) -> Held:
    """The tmpfs files a process of `pids` holds open and none of them maps, made or changed at `since` or after
    (time.time(): a dataset copied to /dev/shm before the run and read with read() is not the run's memory), each
    with one of its holders."""
    pids = list(pids)
    files = _held_files(pids, mounts, since)
    if not files:
        return {}
    mapped = _mapped(pids, files)
    return {key: found for key, found in files.items() if key not in mapped}
