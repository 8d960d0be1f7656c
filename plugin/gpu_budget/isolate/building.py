"""The folder a scenario's assets are built in, beside where they go: one a killed session left is removed by the next.

forkserver.prepare_assets builds a scenario's assets in KEY.tmp-XXXXXXXX
beside KEY, in the kept assets folder, and renames it over KEY once the
prepare returns, or removes it where the prepare failed. A session SIGKILLed
meanwhile (the OOM killer; a real-scale checkpoint half saved is gigabytes)
removes nothing, and nothing proved the folder stale, so each such kill left
one for good. The builder holds an exclusive flock on a file beside the
folder (KEY.tmp-XXXXXXXX.held; the folder stays empty for the prepare) and
marks the file once the lock is taken: the kernel drops the lock with its
last holder, so a marked file whose lock can be taken has no live builder,
and the next build of that KEY removes its folder first (`sweep`). A folder
without a held file (being made, or an older version's) is left.

Two sessions (or xdist workers) asking for one KEY at once built it twice, a
real-scale checkpoint's minutes and gigabytes each: a build is made under an
exclusive flock on KEY.lock beside it (`exclusive`), so the second waits for
the first and finds KEY built; a killed builder's lock goes with it, and the
waiter builds (the file it left is harmless, and taken by the next build).
The holder writes its pid in the lock file, so a waiter can say, once, whom it
waits for (`waiting`): a wait of minutes said nowhere looks like a hang.

A built KEY has its marker beside it (KEY.complete, `built`), made before the
build folder is renamed over KEY, never inside: the runner lists KEY and finds
what the prepare made alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator

from gpu_budget.isolate import held_path

LOCK = ".lock"  # beside a kept folder: <folder>.lock, locked, while one process builds it
HELD = ".held"  # beside a build folder: <folder>.held, locked by its builder
MARK = b"held"  # written in it once its lock is taken
DONE = ".complete"  # beside a built folder: <folder>.complete (inside it, as earlier versions made it, moved out)


def built(target: str) -> bool:
    """Whether `target` is a finished build: the folder, with its marker beside it. An earlier version's marker
    inside it is moved out (where the folder cannot be written, it still counts)."""
    inside = os.path.join(target, DONE)
    with contextlib.suppress(OSError):
        os.rename(inside, target + DONE)
    return os.path.isdir(target) and (os.path.isfile(target + DONE) or os.path.isfile(inside))


def finish(made: str, target: str) -> None:
    """Put the build folder `made` in `target`'s place, its marker made first (a marker alone is no build: `built`
    asks for the folder too); another process that finished it first (a file system without flock) wins."""
    with open(target + DONE, "w"):
        pass
    try:
        os.rename(made, target)
    except OSError:
        if not built(target):
            with contextlib.suppress(OSError):
                os.unlink(target + DONE)
            raise


@contextlib.contextmanager
def exclusive(target: str, waiting: Callable[[int | None], None] | None = None) -> Iterator[None]:
    """Hold `target`'s build lock (its .lock file beside it): another process building it meanwhile is waited for,
    `waiting` told once, before the wait, with the builder's pid (None where it has not written it yet).
    The holder removes the file as it lets go, and a waiter that wakes on a removed one takes the one now at the path
    (as judge/files.py's baseline lock), so nothing is left in the kept folder. An OSError where it cannot be made."""
    name = target + LOCK
    told = waiting is None
    while True:
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # another process builds it
                if not told:
                    told = True
                    with contextlib.suppress(OSError):  # a line that cannot be written is no file system without flock
                        waiting(_builder(fd))
                fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # a file system without flock: built unlocked, as before (twice, where two ask at once)
            break
        except BaseException:
            os.close(fd)
            raise
        held = os.fstat(fd)
        if _inode(name) == (held.st_dev, held.st_ino):
            with contextlib.suppress(OSError):  # for a waiter to name; a killed builder's file holds its pid
                os.ftruncate(fd, 0)
                os.pwrite(fd, str(os.getpid()).encode(), 0)
            break
        os.close(fd)  # its holder removed it while this one waited
    try:
        yield
    finally:
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)
        finally:
            os.close(fd)  # the lock goes after the file has left the path


def builder(target: str) -> tuple[bool, int | None]:
    """Whether another process holds `target`'s build lock now, and its pid where it wrote it: for a process whose
    build runs in another (an environment's helper), which cannot say it waits."""
    try:
        fd = os.open(target + LOCK, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # none: nobody builds it
        return False, None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # let go as it closes
    except BlockingIOError:
        return True, _builder(fd)
    except OSError:  # a file system without flock
        return False, None
    finally:
        os.close(fd)
    return False, None


def _builder(fd: int) -> int | None:
    """The pid the holder of a lock file wrote in it; None where it has not yet (or the file cannot be read)."""
    try:
        text = os.pread(fd, 20, 0).decode("ascii", "replace")
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _inode(path: str) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino


def build_folder(target: str) -> tuple[str, int]:
    """A new, empty folder to build `target` in, beside it (renamed over it once built), and the descriptor of its
    held file, for `done`; the build folders of `target` whose builder is gone are removed first."""
    parent, prefix = os.path.dirname(target), os.path.basename(target) + ".tmp-"
    sweep(parent, prefix)
    path = tempfile.mkdtemp(prefix=prefix, dir=parent)
    fd = os.open(path + HELD, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    held_path.hold(fd, lambda: os.write(fd, MARK))  # a file system without flock: never marked, never taken for stale
    return path, fd


def done(path: str, fd: int) -> None:
    """Remove a build folder (what is left of it: renamed, it is gone already), then its held file and its lock."""
    shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.unlink(path + HELD)
    os.close(fd)


def sweep(parent: str, prefix: str) -> list[str]:
    """Remove the build folders named `prefix`XXXXXXXX in `parent` whose builder is gone; the folders removed."""
    removed = []
    with contextlib.suppress(OSError), os.scandir(parent) as entries:
        for entry in entries:
            if entry.name.startswith(prefix) and entry.name.endswith(HELD) and _stale(entry.path):
                removed.append(entry.path[:-len(HELD)])
    return removed


def _stale(held: str) -> bool:
    """Whether the held file `held` was marked and no live process holds its lock; its folder and it removed if so."""

    def remove() -> None:
        shutil.rmtree(held[:-len(HELD)], ignore_errors=True)
        os.unlink(held)

    return held_path.remove_stale(held, lambda fd: os.read(fd, len(MARK)) == MARK, remove)
