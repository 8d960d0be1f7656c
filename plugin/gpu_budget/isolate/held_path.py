"""A path a live process holds by an exclusive flock, removed by a later process once no one holds it.

Its maker locks a descriptor of it (the folder itself, or a file beside it)
and only then marks it (`hold`): the kernel drops a lock with its last holder,
wherever that process ran, so a marked path whose lock can be taken has no
live maker, and `remove_stale` removes it. One without the mark (being made,
or an older version's) is never proven stale, and is kept. The folders under
the temporary folder (unix_paths.py) and a scenario's build folders
(building.py) are held so.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable


def hold(fd: int, mark: Callable[[], object]) -> None:
    """Lock `fd` without waiting, then mark its path (`mark`): only a path whose lock was taken is marked, so a file
    system without flock leaves it unmarked, and never taken for stale."""
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        mark()


def remove_stale(lock: str, marked: Callable[[int], bool], remove: Callable[[], None], *, folder: bool = False) -> bool:
    """Whether the held path locked at `lock` (a `folder`, or a file) was marked (`marked`, given a descriptor of it)
    and no live process holds its lock; `remove` run if so, while locked here, so that another sweep cannot take it at
    once. The mark is asked before the lock is taken: taking the lock of one being made would fail its maker's."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_DIRECTORY if folder else 0)
    try:
        fd = os.open(lock, flags)
    except OSError:
        return False
    try:
        if not marked(fd):  # being made (not yet locked and marked), or an older version's
            return False
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        remove()
        return True
    except OSError:  # held: its maker is alive (or another sweep removed it first)
        return False
    finally:
        os.close(fd)
