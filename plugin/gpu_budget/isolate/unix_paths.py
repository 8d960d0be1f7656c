"""The Unix socket paths the gate makes under the temporary folder ($TMPDIR), checked before any child starts.

A Unix socket's path holds at most 107 bytes on Linux (sun_path's 108 less its
terminating NUL); past that, bind() fails with a bare "AF_UNIX path too long"
that names neither the path nor its cause. Two sockets live under the
temporary folder: multiprocessing's forkserver listens on
<tmp>/pymp-XXXXXXXX/listener-XXXXXXXX, and a command case's processes mark
phases on <tmp>/gpu-budget-sock-XXXXXXXX/marks (command.py). The first is the
longer, so a temporary folder that fits it fits both.
"""

from __future__ import annotations

import os
import tempfile

MAX_PATH = 107  # bytes in a Unix socket's path on Linux
SOCKET_PREFIX = "gpu-budget-sock-"  # a command case's socket folder: <tmp>/gpu-budget-sock-XXXXXXXX
MARKS = "marks"  # the socket's name in it
# the longest path made under the temporary folder: multiprocessing's forkserver's (mkdtemp and mktemp add 8 letters)
_LONGEST = os.path.join("pymp-" + "X" * 8, "listener-" + "X" * 8)


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


def socket_folder() -> str:
    """A new folder for a command case's mark socket, under a temporary folder checked to hold it; its maker removes
    it (forkserver.run_child)."""
    check()
    return tempfile.mkdtemp(prefix=SOCKET_PREFIX)
