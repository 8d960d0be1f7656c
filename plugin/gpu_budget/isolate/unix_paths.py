"""The Unix socket paths the gate makes under the temporary folder ($TMPDIR), checked before any child starts.

A Unix socket's path holds at most 107 bytes on Linux (sun_path's 108 less its
terminating NUL); past that, bind() fails with a bare "AF_UNIX path too long"
that names neither the path nor its cause. Two sockets live under the
temporary folder: multiprocessing's forkserver listens on
<tmp>/gpu-budget-mp-XXXXXXXX/listener-XXXXXXXX (its temporary folder, held
as below: `mp_folder`, forkserver.py), and a command case's processes mark
phases on <tmp>/gpu-budget-sock-XXXXXXXX/marks (command.py). The first is the
longer, so a temporary folder that fits it fits both.

A command case's socket folder, every case's event file (the child's
outcome, streamed; in a folder of its own, <tmp>/gpu-budget-events-XXXXXXXX/
events.jsonl) and a recording run's memory snapshot (<tmp>/gpu-budget-
snapshot-XXXXXXXX/snapshot.pickle, until it is moved beside the report) are
removed as the case ends (`remove`), but a session SIGKILLed mid-case runs no
cleanup and leaves them behind. The session holds an exclusive
flock on each folder it made while the folder exists, and marks it as held
(OWNED) only once the lock is taken: the kernel drops the lock with the last
process holding it, so a marked folder whose lock can be taken has no live
owner, wherever its owner ran (another pid namespace sharing the folder
included), and the first folder a later process makes removes such folders
first (`sweep`). The same holds multiprocessing's temporary folder of a gated
process (`mp_folder`), where multiprocessing would make a pymp-XXXXXXXX folder
that only its own exit removes. A folder without the mark (one being made, or
one left by an older version) is never proven stale, and is kept; so is any
other file there (an older version's bare gpu-budget-XXXXXXXX.jsonl, a pymp-*
folder of another process, which no lock of the gate's holds).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import shutil
import tempfile
from collections.abc import Mapping

from gpu_budget.isolate import held_path

MAX_PATH = 107  # bytes in a Unix socket's path on Linux
SOCKET_PREFIX = "gpu-budget-sock-"  # a command case's socket folder: <tmp>/gpu-budget-sock-XXXXXXXX
MARKS = "marks"  # the socket's name in it
STDERR_TAIL = "stderr-tail"  # beside it: the command's stderr tail as it stands, left to a child's parent should it stop
LAUNCHER_LOGS = "torchelastic"  # beside it: torchrun's log folder (command.py), which torchrun itself never removes
COMMAND_TMP = "tmp"  # beside it: the command's own $TMPDIR (command_tmp), so what it leaves there goes with the case
EVENTS_PREFIX = "gpu-budget-events-"  # a case's event folder: <tmp>/gpu-budget-events-XXXXXXXX
EVENTS = "events.jsonl"  # the child's event file's name in it
SNAPSHOT_PREFIX = "gpu-budget-snapshot-"  # a recording run's memory snapshot's folder: <tmp>/gpu-budget-snapshot-XXXXXXXX
SNAPSHOT = "snapshot.pickle"  # the snapshot's name in it (a command's ranks dump theirs beside it: SNAPSHOT.PID)
MP_PREFIX = "gpu-budget-mp-"  # multiprocessing's temporary folder in a gated process: <tmp>/gpu-budget-mp-XXXXXXXX
OWNED = "owned"  # made in a held folder once its maker holds the folder's flock
_PREFIXES = (SOCKET_PREFIX, EVENTS_PREFIX, SNAPSHOT_PREFIX, MP_PREFIX)  # the held folders `sweep` may remove
_HELD: dict[str, int] = {}  # held folder -> the descriptor of it whose flock says its maker is alive
_SWEPT: list[bool] = []  # whether this process has removed the stale held folders yet (once: the first folder)
# the longest path made under the temporary folder: multiprocessing's forkserver's (mkdtemp and mktemp add 8 letters)
_LONGEST = os.path.join(MP_PREFIX + "X" * 8, "listener-" + "X" * 8)


class SocketPathTooLong(RuntimeError):
    """The temporary folder is too long for the Unix sockets the gate makes under it."""


def check(tmp: str | None = None) -> None:
    """Raise SocketPathTooLong, naming $TMPDIR, its length, the limit and what to do, where a socket under the
    temporary folder (`tmp`, tempfile's by default) would be longer than a Unix socket's path may be."""
    tmp = tempfile.gettempdir() if tmp is None else tmp
    needed = len(os.fsencode(os.path.join(tmp, _LONGEST)))
    if needed <= MAX_PATH:
        return
    room = MAX_PATH - (needed - len(os.fsencode(tmp)))
    given = os.environ.get("TMPDIR")
    named = f"TMPDIR={given!r} ({len(os.fsencode(given))} bytes)" if given else f"the temporary folder {tmp!r}"
    used = f", used as {tmp!r} ({len(os.fsencode(tmp))} bytes)" if given and given != tmp else ""
    raise SocketPathTooLong(
        f"{named}{used} is too long for the Unix sockets the gate makes under it: multiprocessing's forkserver "
        f"listens on a path {needed} bytes long there, and a Unix socket's path holds at most {MAX_PATH} bytes on "
        f"Linux (bind() would fail with 'AF_UNIX path too long'); set TMPDIR to a shorter folder, of at most "
        f"{room} bytes (TMPDIR=/tmp, say)")


def command_tmp(folder: str, env: Mapping[str, str]) -> dict[str, str]:
    """The environment that gives a command case a temporary folder of its own in the case's `folder` (made here):
    what its processes leave under $TMPDIR (accelerate launch's torchelastic_XXXXXXXX log folder, which neither it
    nor torchrun removes) goes with the case. torch's compile cache stays where torch puts it by default (under the
    session's temporary folder), so a compiled case still finds what an earlier one compiled. None where the folder
    would leave less room for a Unix socket under it than the gate's check allows (the command's TMPDIR stays)."""
    tmp = os.path.join(folder, COMMAND_TMP)
    if len(os.fsencode(os.path.join(tmp, _LONGEST))) > MAX_PATH:
        return {}
    os.makedirs(tmp, exist_ok=True)
    out = {"TMPDIR": tmp}
    if "TORCHINDUCTOR_CACHE_DIR" not in env:
        out["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tempfile.gettempdir(), "torchinductor_" + _user())
    return out


def _user() -> str:
    """The user's name as torch's default compile cache folder holds it (torch/_inductor/runtime/cache_dir_utils.py)."""
    try:
        name = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        name = f"uid_{os.getuid()}"
    return re.sub(r'[\\/:*?"<>|]', "_", name)


def socket_folder() -> str:
    """A new folder for a command case's mark socket, under a temporary folder checked to hold it, held by this
    process until its maker removes it (`remove`, forkserver.run_child); the first one a process makes removes the
    stale ones first (`sweep`)."""
    check()
    return _held_folder(SOCKET_PREFIX)


def mp_folder() -> str:
    """A new folder for multiprocessing's temporary files in this process (its forkserver's listener: forkserver.py),
    under a temporary folder checked to hold it, held by this process until its maker removes it (`remove`), so one a
    SIGKILLed session leaves is removed by a later one (`sweep`), where multiprocessing's own pymp-XXXXXXXX folder
    would stay for good."""
    check()
    return _held_folder(MP_PREFIX)


def events_file() -> str:
    """A new, empty file for a child's events (forkserver.run_child), in a folder of its own held by this process
    until its maker removes it (`remove`, given the folder: os.path.dirname); the first held folder a process makes
    removes the stale ones first (`sweep`)."""
    path = os.path.join(_held_folder(EVENTS_PREFIX), EVENTS)
    with open(path, "x"):
        pass
    return path


def snapshot_file() -> str:
    """A new, empty file for a recording run's memory snapshot (session/recording.py), in a folder of its own held by
    this process until its maker removes it (`remove`, given the folder): a snapshot is the allocator's history, up
    to hundreds of MiB, and one a SIGKILLed session leaves is removed by a later one (`sweep`)."""
    path = os.path.join(_held_folder(SNAPSHOT_PREFIX), SNAPSHOT)
    with open(path, "x"):
        pass
    return path


def _held_folder(prefix: str) -> str:
    """A new folder named `prefix`XXXXXXXX under the temporary folder, locked by this process and then marked so."""
    if not _SWEPT:
        _SWEPT.append(True)
        sweep()
    path = tempfile.mkdtemp(prefix=prefix)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    _HELD[path] = fd
    held_path.hold(fd, lambda: open(os.path.join(path, OWNED), "x").close())  # without flock: never marked
    return path


def remove(path: str) -> None:
    """Remove a held folder this process made, then let go of its lock (never before: held, it is not stale)."""
    shutil.rmtree(path, ignore_errors=True)
    fd = _HELD.pop(path, None)
    if fd is not None:
        os.close(fd)


def sweep(tmp: str | None = None) -> list[str]:
    """Remove the held folders (socket and event folders) under the temporary folder (`tmp`, tempfile's by default)
    proven stale: marked as held, yet their lock taken here, so no live process holds it. The folders removed."""
    tmp = tempfile.gettempdir() if tmp is None else tmp
    removed = []
    with contextlib.suppress(OSError), os.scandir(tmp) as entries:
        for entry in entries:
            if entry.name.startswith(_PREFIXES) and entry.is_dir(follow_symlinks=False) and _stale(entry.path):
                removed.append(entry.path)
    return removed


def _stale(path: str) -> bool:
    """Whether the held folder at `path` was held and no live process holds it any more; removed if so."""
    return held_path.remove_stale(path, lambda _fd: os.path.isfile(os.path.join(path, OWNED)),
                                  lambda: shutil.rmtree(path, ignore_errors=True), folder=True)
