"""Which of a stopped child's processes hold open for writing a pipe the child reads, named for its timeout message.

A function case that waits for a pipe's end (subprocess.run(capture_output=True), communicate(), a read to EOF)
waits as long as any process holds the pipe's write end: a shell's background `&` it started, say, which outlives
the shell. The child is the subreaper of its processes, so that holder is still among its descendants when the
timeout comes, and /proc tells which pipe each holds, and which way (read here before the kill, which ends them).
"""

from __future__ import annotations

import os
import shlex

from gpu_budget.measure import procfs

NAMED = 10  # holders a message names; the others it counts
_ACCESS = os.O_ACCMODE


def holders(pid: int, descendants: list[int]) -> tuple[str, ...]:
    """Each of `descendants` holding the write end of a pipe `pid` holds the read end of, as "pid N: its command line"
    (lowest pid first: the one that started the others among them); () where none does or /proc cannot be read."""
    read = _pipes(pid, os.O_RDONLY)
    if not read:
        return ()
    return tuple(_named(other) for other in sorted(descendants) if other != pid and _pipes(other, os.O_WRONLY) & read)


def said(named: tuple[str, ...]) -> str:
    """The message's clause for them ("" where there are none)."""
    if not named:
        return ""
    more = len(named) - NAMED
    listed = "; ".join(named[:NAMED]) + (f"; and {more} more" if more > 0 else "")
    return (f"; a pipe it reads was still held open for writing by {listed} (a process it started: a wait for the "
            f"pipe's end, as subprocess.run(capture_output=True) makes, lasts as long as that process holds it)")


def _pipes(pid: int, access: int) -> set[str]:
    """The pipes (as /proc names them, "pipe:[inode]") `pid` holds open with this access mode."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return set()
    found = set()
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("pipe:") and _access(pid, fd) == access:
                found.add(target)
        except OSError:  # closed meanwhile
            continue
    return found


def _access(pid: int, fd: str) -> int | None:
    with open(f"/proc/{pid}/fdinfo/{fd}") as fh:
        for line in fh:
            if line.startswith("flags:"):
                return int(line.split()[1], 8) & _ACCESS
    return None


def _named(pid: int) -> str:
    argv = procfs.read_cmdline(pid)
    if not argv:
        return f"pid {pid}"
    line = shlex.join(argv)
    return f"pid {pid}: {line if len(line) <= 200 else line[:197] + '...'}"
