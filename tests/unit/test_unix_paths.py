"""The temporary folder's length against the Unix sockets the gate makes under it (isolate/unix_paths.py): the limit
is the kernel's, shown by binding real sockets at it."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator

import pytest

from gpu_budget.isolate import forkserver, unix_paths

# the forkserver's listener under the temporary folder: /gpu-budget-mp-XXXXXXXX/listener-XXXXXXXX
TAIL = 1 + len("gpu-budget-mp-XXXXXXXX") + 1 + len("listener-XXXXXXXX")


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
    assert binds(fits + "/gpu-budget-mp-abcdefgh/listener-abcdefgh")
    with pytest.raises(unix_paths.SocketPathTooLong):
        unix_paths.check(over)
    assert not binds(over + "/gpu-budget-mp-abcdefgh/listener-abcdefgh")


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


MAKER = '''
import os, signal, sys
from gpu_budget.isolate import unix_paths
print(unix_paths.socket_folder(), flush=True)
if sys.argv[1] == "killed":
    os.kill(os.getpid(), signal.SIGKILL)
sys.stdin.read()  # alive, holding its folder, until the test closes its stdin
'''


@contextlib.contextmanager
def killed_and_alive(maker: str, made: Callable[[str], bool]) -> Iterator[tuple[str, str, subprocess.Popen, str]]:
    """Under a temporary folder of its own (TMPDIR), one process that made its held path (`maker` prints it) and was
    SIGKILLed, and one that holds its own, alive until the test closes its stdin: (the folder, the killed one's path,
    the live process, its path). `made`: what the killed one's path must be (os.path.isdir, os.path.isfile)."""
    tmp = tempfile.mkdtemp(prefix="gb-", dir="/tmp")
    env = {**os.environ, "TMPDIR": tmp}
    alive = None
    try:
        killed = subprocess.run([sys.executable, "-c", maker, "killed"], check=False, env=env, text=True,
                                stdin=subprocess.DEVNULL, capture_output=True)
        stale = killed.stdout.strip()
        assert killed.returncode == -signal.SIGKILL and made(stale), killed
        alive = subprocess.Popen([sys.executable, "-c", maker, "alive"], env=env, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        yield tmp, stale, alive, alive.stdout.readline().strip()
    finally:
        if alive is not None and alive.poll() is None:
            alive.kill()
            alive.wait()
        shutil.rmtree(tmp)



def test_a_socket_folder_left_by_a_killed_session_is_removed_and_a_live_ones_kept(monkeypatch):
    """A session SIGKILLed mid-case runs no cleanup: before, its <tmp>/gpu-budget-sock-* folder stayed for good. The
    next socket folder made removes those whose maker is gone, never one a live process holds, nor one it cannot
    prove stale (no mark of a holder)."""
    with killed_and_alive(MAKER, os.path.isdir) as (tmp, stale, alive, held):
        unmarked = tempfile.mkdtemp(prefix=unix_paths.SOCKET_PREFIX, dir=tmp)  # as one being made, or an old one
        monkeypatch.setattr(tempfile, "tempdir", tmp)
        monkeypatch.setattr(unix_paths, "_SWEPT", [])
        made = unix_paths.socket_folder()
        assert not os.path.exists(stale)
        assert os.path.isdir(held) and os.path.isdir(unmarked) and os.path.isdir(made)
        alive.stdin.close()
        assert alive.wait(30) == 0 and os.path.isdir(held)  # ended without removing it: stale from now on
        assert unix_paths.sweep(tmp) == [held] and os.path.isdir(made)  # this process still holds its own
        unix_paths.remove(made)
        assert sorted(os.listdir(tmp)) == [os.path.basename(unmarked)]


EVENTS_MAKER = '''
import os, signal, sys
from gpu_budget.isolate import unix_paths
path = unix_paths.events_file()  # as forkserver.run_child makes a child's event file
with open(path, "a") as out:  # the child's first event, streamed
    out.write('{"kind": "started"}\\n')
print(path, flush=True)
if sys.argv[1] == "killed":
    os.kill(os.getpid(), signal.SIGKILL)
sys.stdin.read()  # alive, holding its file, until the test closes its stdin
'''


def test_an_event_file_left_by_a_killed_session_is_removed_and_a_live_ones_kept(monkeypatch):
    """A session SIGKILLed mid-case left its child's event file (<tmp>/gpu-budget-*.jsonl) for good: nothing proved
    it stale. Held as a socket folder is, the next held folder made removes it, never a live session's, nor a file
    no lock proves stale (an older version's event file, multiprocessing's pymp-* folder)."""
    with killed_and_alive(EVENTS_MAKER, os.path.isfile) as (tmp, stale, alive, held):
        old = tempfile.mkstemp(prefix="gpu-budget-", suffix=".jsonl", dir=tmp)  # an older version's, unprovable
        os.close(old[0])
        pymp = tempfile.mkdtemp(prefix="pymp-", dir=tmp)  # multiprocessing's: no lock of the gate's proves it stale
        monkeypatch.setattr(tempfile, "tempdir", tmp)
        monkeypatch.setattr(unix_paths, "_SWEPT", [])
        made = unix_paths.socket_folder()  # the first held folder this process makes sweeps
        assert not os.path.exists(stale), os.listdir(tmp)
        assert os.path.isfile(held) and os.path.isfile(old[1]) and os.path.isdir(pymp)
        with open(held) as fh:
            assert fh.read() == '{"kind": "started"}\n'  # untouched
        alive.stdin.close()
        assert alive.wait(30) == 0 and os.path.isfile(held)  # ended without removing it: stale from now on
        assert unix_paths.sweep(tmp) == [os.path.dirname(held)] and os.path.isdir(made)
        unix_paths.remove(made)
        assert sorted(os.listdir(tmp)) == sorted([os.path.basename(old[1]), os.path.basename(pymp)])


MP_MAKER = '''
import os, signal, sys
from multiprocessing import util
from gpu_budget.isolate import forkserver
forkserver.forkserver(())  # a session's forkserver: it listens on a socket in multiprocessing's temporary folder
print(util.get_temp_dir(), flush=True)
if sys.argv[1] == "killed":
    os.kill(os.getpid(), signal.SIGKILL)
sys.stdin.read()  # alive, its forkserver running, until the test closes its stdin
'''


def test_the_forkserver_folder_of_a_killed_session_is_removed_and_a_live_ones_kept(monkeypatch):
    """multiprocessing puts its forkserver's listener in a pymp-* folder that only its own exit removes: a session
    SIGKILLed (the OOM killer, a CI job's last step) left it for good, one more each time. Held as the gate's folders
    are, the next held folder made removes it once its session is gone, never a live session's; a session that ends
    removes its own."""
    with killed_and_alive(MP_MAKER, os.path.isdir) as (tmp, stale, alive, held):
        monkeypatch.setattr(tempfile, "tempdir", tmp)
        monkeypatch.setattr(unix_paths, "_SWEPT", [])
        made = unix_paths.socket_folder()
        assert not os.path.exists(stale), os.listdir(tmp)
        assert os.listdir(held) != [] and os.path.basename(held).startswith("gpu-budget-")  # the live one's listener
        alive.stdin.close()
        assert alive.wait(30) == 0
        unix_paths.remove(made)
        assert os.listdir(tmp) == []  # the live session removed its own as it ended


SNAPSHOT_MAKER = '''
import os, signal, sys
from gpu_budget import Scenario
from gpu_budget.session import recording


def run_child(scenario, request):  # a failing CUDA case run again with the recorder on: its dump, half written
    with open(request.path, "wb") as out:
        out.write(b"snapshot" * 1000)
    print(request.path, flush=True)
    if sys.argv[1] == "killed":
        os.kill(os.getpid(), signal.SIGKILL)  # the OOM killer, a CI job's last step: no cleanup runs
    sys.stdin.read()  # alive, its recording run going on, until the test closes its stdin
    raise SystemExit(0)


recording.snapshot_run(Scenario(name="s", run="runners:run"), run_child, "snapshots", "test_mem.py::test_s")
'''


def test_a_memory_snapshot_left_by_a_killed_session_is_removed_and_a_live_ones_kept(monkeypatch):
    """A session SIGKILLed during a failing CUDA case's recording run left its memory snapshot
    (<tmp>/gpu-budget-snapshot-*.pickle, the allocator's history: it can be hundreds of MiB) for good. Dumped in a
    held folder, the next held folder made removes it, never a live session's."""
    with killed_and_alive(SNAPSHOT_MAKER, os.path.isfile) as (tmp, stale, alive, held):
        monkeypatch.setattr(tempfile, "tempdir", tmp)
        monkeypatch.setattr(unix_paths, "_SWEPT", [])
        made = unix_paths.socket_folder()  # the first held folder this process makes sweeps
        assert not os.path.exists(stale), os.listdir(tmp)
        assert os.path.isfile(held)
        alive.stdin.close()
        assert alive.wait(30) == 0 and not os.path.exists(os.path.dirname(held))  # its own, removed as it ends
        unix_paths.remove(made)
        assert os.listdir(tmp) == []


def test_a_commands_temporary_folder_is_its_cases_own_where_a_socket_fits_under_it(folder_of, monkeypatch):
    """accelerate launch's torchelastic_XXXXXXXX log folder goes where $TMPDIR points: the case's folder, removed with
    it. torch's compile cache stays where torch's default puts it (the session's temporary folder)."""
    cache_dir_utils = pytest.importorskip("torch._inductor.runtime.cache_dir_utils")
    tmp = folder_of(20)  # a session's short TMPDIR
    monkeypatch.setattr(tempfile, "tempdir", tmp)
    case = os.path.join(tmp, "gpu-budget-sock-abcdefgh")
    os.mkdir(case)
    env = unix_paths.command_tmp(case, {})
    assert env == {"TMPDIR": os.path.join(case, "tmp"), "TORCHINDUCTOR_CACHE_DIR": cache_dir_utils.default_cache_dir()}
    assert os.path.isdir(os.path.join(case, "tmp"))
    assert unix_paths.command_tmp(case, {"TORCHINDUCTOR_CACHE_DIR": "/c"}) == {"TMPDIR": os.path.join(case, "tmp")}
    deep = folder_of(unix_paths.MAX_PATH - TAIL)  # the session's room, not the command's
    assert unix_paths.command_tmp(deep, {}) == {} and not os.path.exists(os.path.join(deep, "tmp"))
