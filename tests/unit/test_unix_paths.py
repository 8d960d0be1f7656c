"""The temporary folder's length against the Unix sockets the gate makes under it (isolate/unix_paths.py): the limit
is the kernel's, shown by binding real sockets at it."""

import os
import shutil
import socket
import tempfile

import pytest

from gpu_budget.isolate import forkserver, unix_paths

# the forkserver's listener under the temporary folder: /pymp-XXXXXXXX/listener-XXXXXXXX
TAIL = 1 + len("pymp-XXXXXXXX") + 1 + len("listener-XXXXXXXX")


@pytest.fixture
def folder_of():
    """Makes an existing folder of exactly `size` bytes under /tmp (removed after the test)."""
    made = []

    def make(size: int) -> str:
        top = tempfile.mkdtemp(prefix="gb-", dir="/tmp")
        made.append(top)
        path = os.path.join(top, "p" * (size - len(top) - 1))
        os.mkdir(path)
        assert len(path) == size
        return path

    yield make
    for top in made:
        shutil.rmtree(top)


def binds(path: str) -> bool:
    """Whether a Unix socket binds at `path` (its folder made first)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with socket.socket(socket.AF_UNIX) as sock:
        try:
            sock.bind(path)
        except OSError as exc:
            assert "too long" in str(exc)
            return False
    os.unlink(path)
    return True


def test_the_longest_folder_check_allows_is_the_longest_a_socket_binds_under(folder_of):
    room = unix_paths.MAX_PATH - TAIL
    fits, over = folder_of(room), folder_of(room + 1)
    unix_paths.check(fits)
    assert binds(fits + "/pymp-abcdefgh/listener-abcdefgh")
    with pytest.raises(unix_paths.SocketPathTooLong):
        unix_paths.check(over)
    assert not binds(over + "/pymp-abcdefgh/listener-abcdefgh")


def test_the_error_names_tmpdir_its_length_the_limit_and_what_to_do(folder_of, monkeypatch):
    long = folder_of(100)
    monkeypatch.setenv("TMPDIR", long)
    with pytest.raises(unix_paths.SocketPathTooLong) as raised:
        unix_paths.check(long)
    said = str(raised.value)
    assert f"TMPDIR={long!r} (100 bytes) is too long" in said
    assert f"at most {unix_paths.MAX_PATH} bytes" in said
    assert f"set TMPDIR to a shorter folder, of at most {unix_paths.MAX_PATH - TAIL} bytes" in said


def test_the_forkserver_and_a_commands_socket_folder_refuse_a_long_temporary_folder(folder_of, monkeypatch):
    long = folder_of(100)
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", long)  # as tempfile reads $TMPDIR once, at its first use
    with pytest.raises(unix_paths.SocketPathTooLong, match="the temporary folder"):
        forkserver.forkserver(())
    with pytest.raises(unix_paths.SocketPathTooLong):
        unix_paths.socket_folder()
    assert os.listdir(long) == []  # nothing made under it
