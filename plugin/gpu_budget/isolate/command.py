"""A command case: the user's script or CLI, unchanged, run and measured as a process tree by the measuring child.

The measuring child (child.py) starts the command and does nothing else; its
own memory is not the command's, so the figures are the command's tree alone
(meter.Meter(external=True)): `ram` is the command's own process (its VmHWM,
counted in full), `ram_tree` the peak over time of the summed tree.

What makes the figure repeat reaches every process through the environment,
since in-process settings (mallopt, torch.set_num_threads) do not cross an
exec: glibc's MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ at the 128 KiB
the steady mode fixes with mallopt (child.steady_malloc: setting either also
turns off glibc's moving threshold), the thread counts, and the kernel-dispatch
pin the forkserver already holds. A variable the scenario's env sets wins.

Phases come from the command's own process over a Unix socket
(GPU_BUDGET_SOCKET): gpu_budget.phase()/step() in a plain loop, or the
gate's callback, which the `_hook/sitecustomize.py` put first on PYTHONPATH
(ahead of a PYTHONPATH the scenario's env sets) adds to every Hugging Face
Trainer (autohook.py). The same socket takes each Python process's report as
it exits. Until the first mark the phase is "run". Under a launcher
(torchrun, accelerate launch) the command's own process is the launcher, and
rank 0's process marks the phases (ranks.py).

GPU figures come the same way: the command's own process (or each rank's)
sends its caching allocator's peaks and NVML's figure of itself with each
mark and its exit report, once its own code has initialised CUDA; the tree's
summed NVML figure is polled from here (gpu_tree.py). An out-of-memory error
that ends the command is a failure of its own kind ("oom"), named with the
phase and step it happened in.

Nothing of the case outlives it: the measuring child is a subreaper, so a
process that daemonises stays its descendant. Once the command's process
exits its descendants get EXIT_GRACE_SECONDS to end on their own (still
measured, in the phase open at its end); whatever is left then is killed and
fails the case, named.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import selectors
import shlex
import signal
import socket
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpu_budget.declare.command_line import CommandLine
from gpu_budget.declare.params import Json
from gpu_budget.isolate import hints, oom_killed, unix_paths
from gpu_budget.isolate.elastic_record import first_failure
from gpu_budget.isolate.launcher import RankEvents, ranks_seen
from gpu_budget.isolate.program import is_shell
from gpu_budget.isolate.wire import Message
from gpu_budget.measure import kernel_floor, oom_kills, procfs
from gpu_budget.measure.tree import inherits_rank
from gpu_budget.model.card import Card
from gpu_budget.model.figures import FIRST_PHASE, RankGpu
from gpu_budget.oom import OOM_KILLER, is_out_of_memory, worker_killed
from gpu_budget.script import CARD_VAR, PARENT_VAR, SNAPSHOT_VAR, SOCKET_VAR

STEADY_MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072"}
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
HOOK_DIR = str(Path(__file__).parents[1] / "_hook")  # gpu_budget/_hook
TAIL_BYTES = 8192  # of stdout and of stderr, kept for the report; the rest is read and dropped
# The folders the session put on its children's PYTHONPATH ahead of its own (forkserver.child_paths: pytest's rootdir
# and test folders, its `pythonpath` option): the measured child's, not the command's, which gets the PYTHONPATH the
# session was started with, as it would outside the gate (a test's helper module would shadow the project's own)
SESSION_PATHS = "GPU_BUDGET_SESSION_PATHS"
LAUNCHER_LOG_DIR = "PET_LOG_DIR"  # torchrun's --log-dir, which it reads from the environment where its line gives none
# How long the command's descendants may run on after its own process exits, to end by themselves before they are
# killed as leftovers. multiprocessing's resource tracker (spawn, forkserver) and its forkserver end on the EOF of a
# pipe the exited process held, within milliseconds of it; the grace leaves room for a loaded runner, and bounds what
# a real leftover (a daemon) adds to the case.
EXIT_GRACE_SECONDS = 2.0
LEFTOVERS_NAMED = 10  # leftover processes a failure names; the others it counts
SHELL_SIGNALLED = 128  # a shell exits with 128 + N where the process it waited for was killed by signal N
# The command starts a process group of its own: a script that ends its group's processes as it exits (a shell's
# `trap "kill 0" EXIT`, os.killpg(0, ...)) would otherwise kill the measuring child with them, and a run that went
# well would fail as the child's death ("killed by SIGTERM"), a SIGKILL of it even as an OOM kill. What the command
# leaves is ended by its pids all the same (lifecycle.kill_descendants; the forkserver, a subreaper, for one whose
# measuring child died first). Python 3.10 has no process_group=: a session of its own is a group of its own.
OWN_GROUP = {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}


class CommandFailed(Exception):
    """The command could not start, exited non-zero or left processes running: the case fails with this message.
    `rank_cuda`: the ranks' GPU figures reported up to then, for the failed case's summary."""

    def __init__(self, kind: str, message: str, rank_cuda: Mapping[int, RankGpu] | None = None) -> None:
        super().__init__(message)
        self.kind, self.rank_cuda = kind, rank_cuda


def recorded_env(threads: int, malloc: str, user: dict[str, str]) -> dict[str, str]:
    """The pins a command case runs under, as its row and fingerprint record them (the user's env included)."""
    pins = {var: str(threads) for var in THREAD_VARS}
    if malloc == "steady":
        pins.update(STEADY_MALLOC_ENV)
    return {**pins, **user}


def pinned_env(base: dict[str, str], threads: int, malloc: str, user: dict[str, str], socket_path: str,
               snapshot: str | None = None, card: Card | None = None) -> dict[str, str]:
    """The command's environment: the measuring child's (dispatch pins included; its PYTHONPATH without the
    session's folders, SESSION_PATHS), the hook, its socket and this process's pid (PARENT_VAR: the hook knows the
    command's own process by it), then the pins and the user's (which win), except that the hook's
    folder stays first on a PYTHONPATH the user's env sets: its sitecustomize runs the user's own one after it (a
    project's sitecustomize.py on that path still runs).
    torchrun's log folder goes beside the socket, where none is set: torchrun makes a torchelastic_XXXXXXXX folder
    under $TMPDIR and never removes it, and the case's folder goes with the case (a --log-dir given still wins).
    accelerate launch hands torchrun its own --log_dir (none, unless given), so $TMPDIR goes beside the socket too,
    where the user's env sets none (unix_paths.command_tmp)."""
    env = {**base, **recorded_env(threads, malloc, user), SOCKET_VAR: socket_path, PARENT_VAR: str(os.getpid())}
    if "PYTHONPATH" not in user:
        env["PYTHONPATH"] = _without_session_paths(env.get("PYTHONPATH", ""), env.get(SESSION_PATHS, ""))
    env.pop(SESSION_PATHS, None)
    env.setdefault(LAUNCHER_LOG_DIR, os.path.join(os.path.dirname(socket_path), unix_paths.LAUNCHER_LOGS))
    if "TMPDIR" not in user:
        env.update(unix_paths.command_tmp(os.path.dirname(socket_path), env))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [HOOK_DIR, env.get("PYTHONPATH")]))
    if snapshot:
        env[SNAPSHOT_VAR] = snapshot
    if card is not None:
        env[CARD_VAR] = card.to_env()
    return env


def _without_session_paths(pythonpath: str, session: str) -> str:
    """`pythonpath` less the session's folders it starts with (SESSION_PATHS): the one the session was started with."""
    parts, own = pythonpath.split(os.pathsep), [p for p in session.split(os.pathsep) if p]
    return os.pathsep.join(parts[len(own):]) if own and parts[:len(own)] == own else pythonpath


class _Tail:
    """Reads a pipe to its end on a thread, keeping the last TAIL_BYTES (a script may print gigabytes) and passing
    every byte on to `forward` (the measuring child's own stdout or stderr: the descriptors pytest's capture holds,
    so what a command prints is its test's captured output, as a function case's is); with `mirror`, the tail as it
    stands is kept in that file too, so a child stopped mid-command (a timeout) leaves it to its parent."""

    def __init__(self, pipe, forward: int | None, mirror: str | None = None) -> None:
        self.pipe, self.chunks, self.size, self.total, self.forward = pipe, deque(), 0, 0, forward
        self.mirror = os.open(mirror, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) if mirror else None
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _mirror(self) -> None:
        if self.mirror is not None:
            data = b"".join(self.chunks)[-TAIL_BYTES:]
            os.ftruncate(self.mirror, 0)
            os.pwrite(self.mirror, data, 0)

    def _loop(self) -> None:
        while True:
            chunk = self.pipe.read1(65536) if hasattr(self.pipe, "read1") else self.pipe.read(65536)
            if not chunk:
                break
            self._forward(chunk)
            self.chunks.append(chunk)
            self.size += len(chunk)
            self.total += len(chunk)
            while self.size - len(self.chunks[0]) >= TAIL_BYTES:
                self.size -= len(self.chunks.popleft())
            self._mirror()
        if self.mirror is not None:
            os.close(self.mirror)
            self.mirror = None

    def _forward(self, chunk: bytes) -> None:
        """Pass the chunk on whole; a descriptor that cannot take it (closed) is given up, the pipe still read."""
        view = memoryview(chunk)
        while view and self.forward is not None:
            try:
                view = view[os.write(self.forward, view):]
            except OSError:
                self.forward = None

    def text(self, lines: int = 20) -> str:
        self.thread.join(timeout=5)
        return last_lines(b"".join(self.chunks)[-TAIL_BYTES:], lines)

    def close(self) -> None:
        """Read to the end (every writer has ended by now) and close the pipe, leaving no file to the collector."""
        self.thread.join(timeout=5)
        if not self.thread.is_alive():
            self.pipe.close()


def last_lines(data: bytes, lines: int = 20) -> str:
    """The last `lines` lines of a stream's tail, as text (bytes that are not UTF-8 replaced)."""
    return "\n".join(data.decode(errors="replace").splitlines()[-lines:])


class MarkServer:
    """The socket the command's processes mark phases and report exits on; answered at once, in order. It lives in
    `folder`, which the session made and removes (ChildRequest.sockets), so neither is left behind by a killed child."""

    def __init__(self, meter, folder: str, main_pid: int | None = None, on_rank=None) -> None:
        self.meter, self.main_pid, self.on_rank = meter, main_pid, on_rank
        self.path = os.path.join(folder, unix_paths.MARKS)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(64)
        self.sock.setblocking(False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.sock, selectors.EVENT_READ)
        self.buffers: dict[socket.socket, bytes] = {}
        self.ignored = 0  # phase marks from other processes than the command's own (or rank 0's)
        self.unread_steps: dict[int, int] = {}  # rank -> the step marks of its processes among those ignored
        self.rank0_pid: int | None = None
        self.ranks = RankEvents()
        self.marks = 0
        self.heard: set[int] = set()  # the pids that sent anything: the hook ran in them
        self.failure: tuple[str, bool, str | None, int | None] | None = None  # the command's own process's
        # uncaught exception: (text, out of memory, the phase and step it happened in)
        self.own_pids: dict[int, int] = {}  # rank -> the pid of its own process (the one that reported its exit)
        self.capped: dict[int, tuple[int | None, str]] = {}  # pid -> (rank, the card's cap it runs under)
        self.cap_failed: dict[int, str] = {}  # pid -> why the card's cap could not be applied in it
        self.on_gpu: set[int] = set()  # the pids that reported GPU figures

    def serve(self, timeout: float) -> None:
        for key, _ in self.selector.select(timeout):
            if key.fileobj is self.sock:
                try:
                    conn, _ = self.sock.accept()
                except BlockingIOError:
                    continue
                conn.setblocking(False)
                self.buffers[conn] = b""
                self.selector.register(conn, selectors.EVENT_READ)
                continue
            conn = key.fileobj
            try:
                data = conn.recv(65536)
            except BlockingIOError:
                continue
            except OSError:  # reset by a process killed mid-message: as closed
                data = b""
            if not data:
                self.selector.unregister(conn)
                self.buffers.pop(conn, None)
                conn.close()
                continue
            self.buffers[conn] += data
            while b"\n" in self.buffers[conn]:
                line, _, self.buffers[conn] = self.buffers[conn].partition(b"\n")
                self._handle(conn, line)

    def _handle(self, conn: socket.socket, line: bytes) -> None:
        try:
            message = Message.from_json(json.loads(line))
        except ValueError:
            message = Message()
        if message.rank is not None and (message.pid == self.main_pid or self._inherited(message.pid)):
            message = replace(message, rank=None)  # the launcher, or a process under the RANK the session ran with
        self.ranks.take(message)
        self._progress(message)
        self._gpu(message)
        self._take(message)
        conn.setblocking(True)
        try:
            conn.sendall(b'{"ok": true}\n')
        except OSError:
            pass
        conn.setblocking(False)

    def _inherited(self, pid: int | None) -> bool:
        """Whether the process that sent a message holds the RANK the command was started with (tree.inherits_rank)."""
        return pid is not None and self.meter.tree is not None and inherits_rank(self.meter.tree, pid)

    def _take(self, message: Message) -> None:
        """What a message tells the tree and the phases: who sent it, its exit report, a phase mark, a failure."""
        pid, rank = message.pid, message.rank
        if pid is not None:
            self.heard.add(pid)
            if rank is not None and self.meter.tree is not None:
                self.meter.tree.claim_rank(pid, rank)
        if message.exit is not None:
            self.meter.tree.report(pid, message.exit, message.shared, rank, message.rss, message.shmem, message.file)
            if rank is not None and message.own and pid is not None:
                self.own_pids.setdefault(rank, pid)
        elif message.phase is not None:
            if self._marks_phases(message):
                self.meter.start(message.phase, message.step, gap=message.gap)
                self.marks += 1
            else:
                self.ignored += 1
                if rank is not None and message.step is not None:
                    self.unread_steps[rank] = self.unread_steps.get(rank, 0) + 1
        elif message.failed is not None and pid == self.main_pid and self.failure is None:
            self.failure = (message.failed, message.oom, *self.meter.open_phase)
        elif message.card is not None and pid is not None:
            self.capped[pid] = (rank, message.card)
        elif message.card_failed is not None and pid is not None:
            self.cap_failed[pid] = message.card_failed

    def _gpu(self, message: Message) -> None:
        """The GPU figures a process sent: the command's own process's close its open phase (before the phase its
        mark begins); the GPU it named is the tree's (a rank's figures are the ranks' own: RankEvents)."""
        if message.cuda is not None and message.pid is not None:
            self.on_gpu.add(message.pid)
        if message.gpu and self.meter.gpu_tree is not None:
            self.meter.gpu_tree.note_device(message.gpu)
        if message.pid == self.main_pid and message.cuda is not None:
            self.meter.report_gpu(message.cuda)

    def _progress(self, message: Message) -> None:
        """A rank's phase mark, or its own process's exit, to on_rank(rank, phase or None, the GPU figures of the phase
        it closes or None, whether the phase it marks is a gap)."""
        rank = message.rank
        if self.on_rank is None or rank is None:
            return
        cuda = dict(message.cuda) if message.cuda is not None else None
        if message.phase is not None:
            self.on_rank(rank, message.phase, cuda, message.gap)
        elif message.exited_own:
            self.on_rank(rank, None, cuda, False)

    def _marks_phases(self, message: Message) -> bool:
        """The command's own process marks the phases, or under a launcher rank 0's process (the first to mark)."""
        if message.pid == self.main_pid:
            return True
        if message.rank == 0 and self.rank0_pid in (None, message.pid):
            self.rank0_pid = message.pid
            return True
        return False

    def close(self) -> None:
        for conn in list(self.buffers):
            conn.close()
        self.selector.close()
        self.sock.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # its folder is the session's to remove


@dataclass(frozen=True)
class CommandRun:
    """What a command that ended well tells its row (`to_json`: the facts), and what goes elsewhere: the memory
    snapshot it dumped, the ranks' GPU figures (for the summary)."""

    argv: tuple[str, ...]
    exit_code: int
    phase_marks: int
    ignored_marks: int
    stdout_bytes: int
    pins: Mapping[str, str]
    notes: tuple[str, ...] = ()  # the hook's note, where the command's own process never reached it
    world: int | None = None  # a launcher's: how many ranks ran
    groups: Mapping[int, int] = field(default_factory=dict)  # rank -> the world size of the group it joined
    backends: tuple[str, ...] = ()
    distributed: Mapping[str, dict[str, str] | bool | list[str]] = field(default_factory=dict)  # RankEvents.distributed
    snapshot: str | None = None
    rank_cuda: Mapping[int, RankGpu] | None = None
    unread_steps: Mapping[int, int] = field(default_factory=dict)  # rank -> its step marks ignored (MarkServer)
    card: tuple[str, ...] = ()  # the card's cap each process on the GPU ran under ("rank 1: ran as on ...")

    def to_json(self) -> dict[str, Json]:
        facts: dict[str, Json] = {"command": list(self.argv), "exit_code": self.exit_code,
                                  "phase_marks": self.phase_marks, "ignored_marks": self.ignored_marks,
                                  "stdout_bytes": self.stdout_bytes, "pins": dict(self.pins)}
        if self.notes:
            facts["notes"] = list(self.notes)
        if self.card:
            facts["card"] = "; ".join(self.card)
        if self.world is not None:
            facts.update(world=self.world, groups={str(r): s for r, s in sorted(self.groups.items())},
                         backend=list(self.backends))
            facts.update(self.distributed)  # what accelerate ran in each rank (its notes carry the hook's)
        return facts


def _check_start(line: CommandLine) -> None:
    if line.cwd is not None and not os.path.isdir(line.cwd):
        raise CommandFailed("command", f"its cwd {line.cwd!r} does not exist or is not a directory")


def _start(line: CommandLine, env: dict[str, str], server: MarkServer) -> subprocess.Popen:
    """The command's process, its output piped; CommandFailed (the socket closed) where it cannot start."""
    program = line.argv[0] if line.argv else ""
    if env.get("PWD") == os.environ.get("PWD"):  # inherited, not the user's: a shell would set it to where it runs
        env = {**env, "PWD": os.path.abspath(line.cwd or os.getcwd())}
    try:
        return subprocess.Popen(list(line.argv), cwd=line.cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, **OWN_GROUP)
    except FileNotFoundError:
        server.close()
        raise CommandFailed("command", f"command {program!r} not found" + hints.not_found(line.argv, line.cwd)) from None
    except PermissionError:
        server.close()
        raise CommandFailed("command", f"command {program!r} is not executable") from None
    except OSError as exc:
        server.close()
        raise CommandFailed("command", f"command {program!r} could not start: {exc}") from None


def _wait(proc: subprocess.Popen, server: MarkServer, meter, poll: float,
          grace: float = EXIT_GRACE_SECONDS) -> tuple[tuple[str | None, int | None], list[str]]:
    """Serve the marks until the command's process exits, then while its descendants end on their own (up to
    `grace` seconds: the open phase still measures them, and their exit reports are taken); (the phase and step
    open at its end, the processes still running after the grace, killed: "pid N: its command line")."""
    from gpu_budget.isolate.lifecycle import await_descendants, kill_descendants

    last: tuple[str | None, int | None] = (None, None)
    names: dict[int, tuple[str, ...] | None] = {}
    try:
        while (ended := kernel_floor.reap(proc.pid)) is None:  # reaped here: wait4 gives the kernel's figure of it
            server.serve(poll)
        proc.returncode, meter.kernel = ended
        server.serve(0)  # marks and exit reports sent just before it exited
        last = meter.open_phase  # where the command was when it ended
        left = await_descendants(os.getpid(), grace, server.serve, poll)
        names = {pid: procfs.read_cmdline(pid) for pid in left}  # read before the kill: its pid alone names nothing
        server.serve(0)  # the exit reports of those that just ended
    finally:
        meter.stop()
        leftovers = kill_descendants(os.getpid())
        server.close()
    return last, [_named(pid, names.get(pid)) for pid in leftovers]


def _named(pid: int, argv: tuple[str, ...] | None) -> str:
    """A leftover process as a message names it: its pid, and its command line where it was read."""
    if not argv:
        return f"pid {pid}"
    line = shlex.join(argv)
    return f"pid {pid}: {line if len(line) <= 200 else line[:197] + '...'}"


def _ran(line: CommandLine, code: int, server: MarkServer, meter, stdout_bytes: int, pins: dict[str, str],
         snapshot: str | None) -> CommandRun:
    """The facts of a command that ended (its memory snapshot kept where it dumped one)."""
    notes = () if server.main_pid in server.heard else (hook_missing(server.main_pid, list(line.argv)),)
    notes += (meter.floored.floor_note(),) if meter.floored is not None else ()
    kept = _keep_snapshot(snapshot, server) if snapshot else None
    capped = sorted(server.capped.values(), key=lambda seen: -1 if seen[0] is None else seen[0])
    ran = CommandRun(line.argv, code, server.marks, server.ignored, stdout_bytes, pins, notes, snapshot=kept,
                     card=tuple(note if rank is None else f"rank {rank}: {note}" for rank, note in capped))
    ranks = ranks_seen(meter.phases)
    if not ranks:
        return ran
    rank_cuda = dict(sorted(server.ranks.cuda.items())) or None
    return replace(ran, world=len(ranks), groups=dict(server.ranks.groups), backends=tuple(sorted(server.ranks.backends)),
                   distributed=server.ranks.distributed(list(notes)), rank_cuda=rank_cuda,
                   unread_steps=dict(sorted(server.unread_steps.items())))


def _judge_end(line: CommandLine, code: int, server: MarkServer, meter, stderr: str,
               last: tuple[str | None, int | None], leftovers: list[str], card: Card | None = None,
               tail: str = "", oom_kill: str | None = None) -> None:
    """Raise CommandFailed for a command that exited non-zero, was killed, left processes running, or whose ranks
    give a reason to fail (with the GPU figures the ranks reported). `stderr`: its last lines, for the message;
    `tail`: all of it that was kept (a cause told further up a traceback); `oom_kill`: the kernel's OOM kill of a
    process of its tree (oom_killed.Verdict.failure), the end of a command that then exited non-zero, as of one that
    exited 0 (a pool that broke on its killed worker): not the plain exit code it led to."""
    shown = shlex.join(line.argv)  # the line as run: an argument holding spaces is quoted
    rank_cuda = dict(sorted(server.ranks.cuda.items())) or None
    tree = meter.tree
    fault = server.ranks.fault(ranks_seen(meter.phases), code, tree.rank_ends if tree is not None else None,
                               line.ranks, line.argv, tree.rank_signals if tree is not None else None,
                               first_failure(stderr), tree.rank_pids if tree is not None else None,
                               tree.rank_attempts if tree is not None else None)
    if code != 0:
        oom = out_of_memory(server, stderr, last)
        if oom:
            under = f" as on {card.label} (each process's caching allocator capped at the card less its CUDA " \
                    "context)" if card is not None else ""
            raise CommandFailed("oom", f"command {shown!r} ran out of memory{under} {oom}" + _tail_note(stderr),
                                rank_cuda)
        how, killed = _ended(code, line.argv, line.env.get("PATH", os.environ.get("PATH")), line.cwd, tail or stderr)
        if oom_kill:
            raise CommandFailed("killed", f"command {shown!r} {how}, and {oom_kill}" + _tail_note(stderr), rank_cuda)
        how += f": {fault}" if fault else ""
        raise CommandFailed("rank" if fault else "killed" if killed else "exit",
                            f"command {shown!r} {how}" + hints.cannot_open(line.argv, line.cwd, stderr)
                            + hints.other_python(line.argv, line.cwd, line.env.get("PATH", os.environ.get("PATH")),
                                                 stderr) + _tail_note(stderr), rank_cuda)
    uncapped = _uncapped(card, server)
    if uncapped:
        raise CommandFailed("card", f"command {shown!r} did not run as on {card.label}: {uncapped}", rank_cuda)
    if leftovers:
        raise CommandFailed("leftover", f"command {shown!r} exited and left {len(leftovers)} process(es) "
                                        f"running ({_first_named(leftovers)}): killed; a case's processes "
                                        "must end with it")
    if fault:
        raise CommandFailed("rank", f"command {shown!r}: {fault}")
    if meter.unread:
        raise CommandFailed("unmeasured", kernel_floor.unmeasured(shown, meter.kernel))


def _first_named(leftovers: list[str]) -> str:
    """The first LEFTOVERS_NAMED leftovers (the lowest pids: the one that started the others among them), the rest
    counted: a script that forks in a loop leaves hundreds, and each named made a message of tens of kilobytes."""
    more = len(leftovers) - LEFTOVERS_NAMED
    return "; ".join(leftovers[:LEFTOVERS_NAMED]) + (f"; and {more} more" if more > 0 else "")


def _ended(code: int, argv: Sequence[str], path: str | None = None, cwd: str | None = None,
           stderr: str = "") -> tuple[str, bool]:
    """How a command that failed ended, in words, and whether a signal ended it: its own process killed, or a shell
    (`sh -c ...`, or a script its #! line runs in one: program.is_shell; `path`, `cwd`: where its program is found)
    that exited with 128 + SIGKILL, the code it gives when the process it waited for was killed, as the kernel's OOM
    killer kills. Only a shell's code is read so, and only SIGKILL's: another program may exit 137. A script that
    failed because its DataLoader worker was SIGKILLed (its `stderr` says so: oom.worker_killed) is read so too."""
    if code < 0:
        name = signal.Signals(-code).name
        return f"was killed by {name}" + (OOM_KILLER if -code == signal.SIGKILL else ""), True
    if code == SHELL_SIGNALLED + signal.SIGKILL and is_shell(argv, path, cwd):
        return (f"exited with {code}, the code a shell gives when the process it waits for is killed by SIGKILL"
                + OOM_KILLER), True
    worker = worker_killed(stderr)
    if worker is not None:
        return f"exited with {code}: its DataLoader worker (pid {worker}) was killed by SIGKILL" + OOM_KILLER, True
    return f"exited with {code}", False


def _uncapped(card: Card | None, server: MarkServer) -> str | None:
    """Why the card's cap did not hold in every process that used the GPU, or None: its hook could not apply the cap
    (a torch without set_per_process_memory_fraction, say), or a process reported GPU figures without a cap."""
    if card is None:
        return None
    if server.cap_failed:
        return "; ".join(f"the cap could not be applied in pid {pid}: {why}" for pid, why in sorted(server.cap_failed.items()))
    bare = sorted(server.on_gpu - set(server.capped))
    return (f"pid {', '.join(map(str, bare))} used the GPU without the cap (the gate's hook caps a process as its own "
            "code first initialises CUDA)") if bare else None


def run(line: CommandLine, meter, threads: int, malloc: str, sockets: str | None, poll: float = 0.02, on_rank=None,
        snapshot: str | None = None, card: Card | None = None) -> CommandRun:
    """Run the command line (Scenario.command_at, "{assets}" filled) under `meter` to its end; its facts.

    Raises CommandFailed for a command that cannot start, exits non-zero, is
    killed, or leaves processes running; the meter holds the phases up to then.
    `sockets`: the folder for the socket its processes mark phases on
    (ChildRequest.sockets: the session's to remove).
    `snapshot`: a file for the memory snapshot of a recording run (the run's
    `snapshot` where one was dumped). `card`: every process of the command runs
    as on that card (its hook caps the allocator: measure/card_cap.py).
    """
    _check_start(line)
    if sockets is None or not os.path.isdir(sockets):
        raise ValueError(f"a command case needs an existing folder for its mark socket, not {sockets!r} "
                         "(forkserver.run_child makes one)")
    server = MarkServer(meter, sockets, on_rank=on_rank)
    env = pinned_env(dict(os.environ), threads, malloc, dict(line.env), server.path, snapshot, card)
    counted = oom_kills.read()  # the kernel's OOM kills so far: one of the case's processes leaves no other trace
    meter.start(FIRST_PHASE)
    proc = _start(line, env, server)
    server.main_pid = proc.pid
    meter.follow(proc.pid, env)
    out, err = _Tail(proc.stdout, _fd(sys.stdout)), _Tail(proc.stderr, _fd(sys.stderr),
                                                          os.path.join(sockets, unix_paths.STDERR_TAIL))
    try:
        last, leftovers = _wait(proc, server, meter, poll)
        stderr, tail = err.text(), err.text(lines=TAIL_BYTES)
    finally:
        out.close()
        err.close()
    ran = _ran(line, proc.returncode, server, meter, out.total, recorded_env(threads, malloc, dict(line.env)), snapshot)
    killed = oom_killed.after_case(counted, meter.tree)
    _judge_end(line, proc.returncode, server, meter, stderr, last, leftovers, card, tail, killed.failure)
    if killed.failure:
        raise CommandFailed("killed", f"command {shlex.join(line.argv)!r} exited 0, but {killed.failure}",
                            dict(sorted(server.ranks.cuda.items())) or None)
    return replace(ran, notes=ran.notes + (killed.note,)) if killed.note else ran


def out_of_memory(server: MarkServer, stderr: str, last: tuple[str | None, int | None]) -> str | None:
    """Where and of what a failed command ran out of memory, or None: the command's own process's uncaught
    out-of-memory error, a rank's (though the launcher then raised its own error: torchrun's ChildFailedError), or
    (where no process named one: a script that caught it and exited) one its stderr ends with, in the phase open at
    its end."""
    def where(phase: str | None, step: int | None) -> str:
        return f"in phase {phase}" + (f" (step {step})" if step is not None else "") if phase else "before any phase"

    if server.failure is not None and server.failure[1]:
        text, _, phase, step = server.failure
        return f"{where(phase, step)}: {text}"
    for rank, (phase, oom) in sorted(server.ranks.failed_in.items()):
        if oom:
            return f"on rank {rank}, {where(phase, None)}: {server.ranks.failed[rank]}"
    if server.failure is not None:  # the command's own process raised something else
        return None
    lines = [line for line in stderr.splitlines() if line.strip()]
    if lines and is_out_of_memory("", lines[-1]):
        return f"{where(*last)}: {lines[-1].strip()[:500]}"
    return None


def hook_missing(pid: int | None, argv: list[str]) -> str:
    """The row's note for a command whose own process never reached the gate's hook."""
    return (f"the gate's hook did not run in the command's own process (pid {pid}, {os.path.basename(argv[0])}): no "
            "phase, step or GPU figure came from it, only the tree's host RAM (a process that is not Python, or a "
            "Python that did not run the hook's sitecustomize: docs/declaring.md, 'Gate your training script')")


def _keep_snapshot(path: str, server: MarkServer) -> str | None:
    """The memory snapshot of a recording run, as `path`: the command's own process's, else the first rank's that
    raised, else rank 0's (each process that recorded dumped its own, `path`.pid); the others are removed."""
    dumped = {int(f.rsplit(".", 1)[1]): f for f in glob.glob(glob.escape(path) + ".*") if f.rsplit(".", 1)[1].isdigit()}
    order = [server.main_pid, *(server.own_pids.get(r) for r in server.ranks.failed), server.own_pids.get(0),
             *sorted(dumped)]
    chosen = next((dumped[pid] for pid in order if pid in dumped), None)
    for file in dumped.values():
        if file != chosen:
            os.unlink(file)
    if chosen is None:
        return None
    os.replace(chosen, path)
    return path


def _fd(stream) -> int | None:
    """The descriptor under a stream, flushed first so what it holds comes before what is passed on to it; None where
    it has none (a stream replaced by an object without one)."""
    try:
        stream.flush()
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _tail_note(stderr: str) -> str:
    return f"; the last lines of its stderr:\n{stderr}" if stderr.strip() else " (its stderr was empty)"
