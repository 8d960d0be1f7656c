"""Run each measured case in a fresh child process and bring back one JSON Measurement.

Children come from a multiprocessing *forkserver* that has imported torch and
transformers once (about half a second per child instead of seconds for a
fresh interpreter; benchmarks/isolation_cost.py measures it). A parent that
has run torch ops is never forked: the forkserver is a clean process.

Children run under a steady allocator by default (child.steady_malloc):
glibc's mmap threshold, which otherwise moves with the order of frees, is
fixed, so the same child peaks at the same RSS to within 0.1 MiB instead of
scattering over ~50 MiB (docs/baselines.md, "Why peaks repeat").

A child that raises, runs out of memory, is SIGKILLed (the kernel's OOM
killer) or outlives its timeout gives a failed Measurement carrying the peak
seen so far: the parent polls the child's VmHWM while it waits, and the child
streams its process tree's running figure (tree.py reads it on a thread, with
the descendants' shared pages, which the parent would have to read a second
time), so even a kill leaves a number for both. The session goes on either way.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import replace
from multiprocessing import spawn
from pathlib import Path

from gpu_budget.declare.params import Json
from gpu_budget.isolate import building, child, command, dispatch, events, pipe_holders, stopped_wait, tracers, unix_paths
from gpu_budget.isolate.lifecycle import descendants, kill_descendants
from gpu_budget.isolate.protocol import ChildEnding, ChildRequest, ScenarioJob, SnapshotRequest
from gpu_budget.measure import procfs
from gpu_budget.measure.host import Probed
from gpu_budget.measure.ranks import reported_gpu
from gpu_budget.measure.summary import Summary, summarize
from gpu_budget.model.card import Card
from gpu_budget.model.figures import PhaseRecord, RankTree, TreeReading
from gpu_budget.model.result import Failure, Measurement
from gpu_budget.requires import MissingDependency
from gpu_budget.units import format_size

DEFAULT_PRELOAD = ("torch", "transformers")
MALLOC_MODES = ("steady", "system")
_POLL_SECONDS = 0.02
_context = None
_started: tuple[tuple[str, ...], str] | None = None  # the running forkserver's (preload, dispatch)
_environment: dict[str, str] = {}  # what its environment adds: the dispatch pin, the children's folders


def forkserver(preload: tuple[str, ...] = DEFAULT_PRELOAD, dispatch_mode: str = "avx2"):
    """The session's forkserver context, started on the first call with this preload and kernel-dispatch pin, and
    started again the same way where it died since (the OOM killer may pick it: it holds torch).

    The pin (dispatch.pin_env) goes into the forkserver's environment only, so
    every measured child inherits it and this process is left as it was.
    multiprocessing would restart a dead forkserver by itself, but with this
    process's environment: without the pin and the children's folders, so
    every later child would run other kernels than its baseline's, unsaid.
    """
    global _context, _started, _environment
    unix_paths.check()  # its socket lives under the temporary folder: a clear error, before anything, where too long
    wanted = (tuple(preload), dispatch_mode)
    if _context is None:
        context = multiprocessing.get_context("forkserver")
        # the tensor counter's imports (torch's dispatch machinery) once for all children, where torch is preloaded
        counter = ["gpu_budget.measure.tensors"] if "torch" in preload else []
        context.set_forkserver_preload(["gpu_budget.isolate.forkserver_reaper", "gpu_budget.isolate.child",
                                        "gpu_budget.measure.meter", *preload, *counter])
        _context, _started = context, wanted
        _environment = {**dispatch.pin_env(dispatch_mode), "PYTHONPATH": _pythonpath(), **_session_paths()}
    elif _started != wanted:
        raise RuntimeError(f"the forkserver already runs with preload/dispatch {_started}, not {wanted}: "
                           "one session, one forkserver")
    _hold_mp_folder()  # where its listener goes: a held folder, so a SIGKILLed session's is removed by the next
    with _environ(_environment):  # a no-op while it runs (a waitpid)
        from multiprocessing import forkserver as server

        server.ensure_running()
    return _context


_mp_folders: list[str] = []  # the held folder this process made multiprocessing's temporary folder, while it is


def _hold_mp_folder() -> None:
    """Make multiprocessing's temporary folder in this process a held one (unix_paths.mp_folder), once: multiprocessing
    would make a pymp-XXXXXXXX folder that only its exit handler removes, so every SIGKILLed session (the OOM killer, a
    CI job's last step), every process ended by os._exit, left one for good. Removed by stop(), else at this process's
    exit as multiprocessing's own is, else by a later session's sweep."""
    if _mp_folders:
        return
    from multiprocessing import process, util

    path = unix_paths.mp_folder()
    process.current_process()._config["tempdir"] = path  # what util.get_temp_dir() returns from now on
    _mp_folders.append(path)
    util.Finalize(None, _release_mp_folder, exitpriority=-100)  # multiprocessing's own folder's priority


def _release_mp_folder() -> None:
    """Remove the held multiprocessing folder (its forkserver stopped), and let multiprocessing make its own again."""
    from multiprocessing import process

    while _mp_folders:
        path = _mp_folders.pop()
        current = process.current_process()
        if current is not None:  # None late in the interpreter's exit
            current._config["tempdir"] = None
        unix_paths.remove(path)


def stop(seconds: float = 5.0) -> None:
    """End the session's forkserver, then its resource tracker, waiting up to `seconds` for each. Left alone they
    exit once this process has gone, but just after it: a parent that waits for the session and then looks (the
    --against sides, a CI step) finds them still running, as if the session had left processes behind. The wait is
    bounded: the tracker lives while any process holds its pipe, and a session must end whatever outlived it. A
    forkserver that does not stop in time is killed: one still importing its preload (a test's own timeout stopped
    its start) hears no stop until that import ends, which may be never."""
    global _context, _started
    if _context is None:
        return
    from multiprocessing import forkserver as server
    from multiprocessing import resource_tracker

    stopped = True
    for owner in (server._forkserver, resource_tracker._resource_tracker):
        stopping = getattr(owner, "_stop", None)  # CPython's own (3.8+), used by its tests; absent: they exit late
        if stopping is not None:
            waiter = threading.Thread(target=stopping, name="gpu-budget-stop", daemon=True)
            waiter.start()
            waiter.join(seconds)
            if waiter.is_alive() and owner is server._forkserver:
                _end_forkserver()  # its stop's waitpid then returns
                waiter.join(seconds)
            stopped = stopped and not waiter.is_alive()
    if stopped:  # else a stop still under way unlinks its socket in the folder later: the folder goes at exit
        _release_mp_folder()
    _context = _started = None


def child_paths() -> list[str]:
    """The folders this process put on sys.path (pytest's: memtests/) that the children need too: GIVEN_PATHS where
    a helper in another environment was handed its parent's (its own sys.path also holds the running environment's
    site folders, which must stay behind the environment's own), else sys.path's entries outside the interpreter."""
    if GIVEN_PATHS is not None:
        return list(GIVEN_PATHS)
    return [p for p in sys.path if p and not p.startswith((sys.prefix, sys.base_prefix))]


GIVEN_PATHS: list[str] | None = None  # set by remote.serve


@contextmanager
def _environ(values: dict[str, str]):
    """os.environ with `values` set and no coverage starter (tracers.py), for a process started meanwhile; restored
    after."""
    saved = {k: os.environ.get(k) for k in (*values, *tracers.STARTERS)}
    for name in tracers.STARTERS:
        os.environ.pop(name, None)
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def forkserver_environ(dispatch_mode: str = "avx2") -> dict[str, str]:
    """The environment the measured children run with (what the fingerprint records of it)."""
    return {**tracers.untraced(os.environ), **dispatch.pin_env(dispatch_mode)}


def _pythonpath() -> str:
    """The children's PYTHONPATH: the folders this process put on sys.path first (3.11's forkserver drops sys.path)."""
    return os.pathsep.join(filter(None, [*child_paths(), os.environ.get("PYTHONPATH")]))


def children_environ(dispatch_mode: str = "avx2") -> dict[str, str]:
    """The environment a child started now runs with: this process's as it is now (a test's monkeypatch.setenv
    included, where the forkserver holds the one of the moment it started), the kernel-dispatch pin and the
    PYTHONPATH the forkserver starts with."""
    return {**forkserver_environ(dispatch_mode), "PYTHONPATH": _pythonpath(), **_session_paths()}


def _session_paths() -> dict[str, str]:
    """Which folders of the children's PYTHONPATH are this session's, not the command's (command.SESSION_PATHS)."""
    return {command.SESSION_PATHS: os.pathsep.join(child_paths())}


@contextmanager
def _without_parent_main():
    """Start children without re-running the parent's __main__ (pytest's script, `-c`, stdin).

    multiprocessing would import it again in every child, costing time and RAM
    that would then be measured; the child's target lives in gpu_budget.isolate.child.
    """
    original = spawn.get_preparation_data

    def preparation_data(name):
        data = original(name)
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
        return data

    spawn.get_preparation_data = preparation_data
    try:
        yield
    finally:
        spawn.get_preparation_data = original


def _read_hwm(pid: int) -> int | None:
    read = procfs.status(pid)
    return None if read is None else read.hwm


def run_child(request: ChildRequest, timeout: float, preload: tuple[str, ...] = DEFAULT_PRELOAD,
              dispatch_mode: str = "avx2", start_timeout: float | None = None) -> tuple[list[events.Event], ChildEnding]:
    """Start child.main(request) from the forkserver; return its events and how it ended. `start_timeout` bounds the
    wait for the forkserver to fork it (its preload imported first), `timeout` where None, START_GRACE more either
    way: the preload's imports are not the child's run, which `timeout` bounds."""
    ctx = forkserver(preload, dispatch_mode)
    request = replace(request, environ=children_environ(dispatch_mode))
    path = unix_paths.events_file()  # in a held folder: a later session removes it where this one is SIGKILLed
    try:
        if request.runs_command:  # made here, so it is removed below whatever ends the child
            request = replace(request, sockets=unix_paths.socket_folder())
        proc = ctx.Process(target=child.main, args=(request, path), name=f"gpu-budget:{request.label}")
        t0: float | None = None  # when the child was started: the wait for it began
        polled_peak, timed_out, held = 0, False, ()
        try:
            _start(proc, (timeout if start_timeout is None else start_timeout) + START_GRACE, preload)
            t0 = time.monotonic()
            while True:
                proc.join(_POLL_SECONDS)
                if proc.exitcode is not None:
                    break
                polled_peak = max(polled_peak, _read_hwm(proc.pid) or 0)
                if time.monotonic() - t0 > timeout:
                    polled_peak = max(polled_peak, _read_hwm(proc.pid) or 0)
                    timed_out, held = True, _pipe_holders(proc.pid, request)  # read before the kill ends them
                    _kill(proc)
                    break
        except BaseException as exc:  # Ctrl-C: the child ends now, not at the interpreter's exit (multiprocessing joins it)
            if t0 is not None:
                _end_interrupted(proc)
            if not stopped_wait.stops_wait(exc):
                raise
            if t0 is None:  # a test's own timeout as the forkserver starts (its preload): nothing measured
                raise stopped_wait.WaitStopped(exc) from exc
            ending = ChildEnding(proc.exitcode, False, round(time.monotonic() - t0, 3), polled_peak or None,
                                 stderr_tail=_stderr_tail(request.sockets), stopped_by=stopped_wait.stopper(exc))
            raise stopped_wait.WaitStopped(exc, events.read(path), ending) from exc  # what it measured, for its row
        lost = proc.exitcode == 255 and procfs.read_stat(proc.pid) is not None  # its forkserver died, it did not
        if lost:
            _end_tree(proc.pid)
        _end_leftovers(proc.pid)
        _end_orphans()
        tail = _stderr_tail(request.sockets) if timed_out or (proc.exitcode or 0) < 0 else None
        ending = ChildEnding(proc.exitcode, timed_out, round(time.monotonic() - t0, 3), polled_peak or None, lost, tail,
                             pipe_holders=held)
        return events.read(path), ending
    finally:
        unix_paths.remove(os.path.dirname(path))
        if request.sockets is not None:
            unix_paths.remove(request.sockets)


def _pipe_holders(pid: int, request: ChildRequest) -> tuple[str, ...]:
    """A timed-out function case's processes holding open for writing a pipe it reads (pipe_holders.py); none for a
    command case, whose child reads the command's own output."""
    return () if request.runs_command else pipe_holders.holders(pid, descendants(pid))


def _end_interrupted(proc) -> None:
    """End an interrupted child and what it left, to the end however often an interrupt comes meanwhile (Ctrl-C
    pressed twice): cut short, the child was left stopped or unreaped, and multiprocessing's exit waited for it
    forever."""
    while True:
        try:
            _kill(proc)
            _end_leftovers(proc.pid)
            _end_orphans()
            return
        except KeyboardInterrupt:
            continue


def _stderr_tail(sockets: str | None, lines: int = 20) -> str | None:
    """The last lines a command wrote to its stderr before its child was stopped (None for a function case, or where
    nothing was written): the child's own report of them died with it."""
    from gpu_budget.isolate.command import last_lines  # a stopped command only: not on every case's path

    try:
        with open(os.path.join(sockets or "", unix_paths.STDERR_TAIL), "rb") as fh:
            text = last_lines(fh.read(), lines)
    except OSError:
        return None
    return text if text.strip() else None


# seconds the forkserver's start (its preload's imports: torch, transformers on a loaded host) gets on top of the
# timeout, so a short --gpu-budget-timeout bounds the child's run and never fails a preload that merely loads slowly
START_GRACE = 30.0


def _start(proc, timeout: float, preload: tuple[str, ...]) -> None:
    """proc.start(), which waits for the forkserver to fork the child and send its pid, bounded by `timeout`.

    The forkserver imports the preload before it forks a first child: an
    import that hangs there would hang the session past any timeout (the
    child's own run has not begun), one that crashes it would end the start
    with a bare EOFError. A forkserver still not forking after `timeout` is
    ended, with what it started; either way a RuntimeError names the preload.
    """
    fired: list[bool] = []

    def expire() -> None:
        fired.append(True)  # before the kill: the start's read fails as soon as the forkserver is gone
        _end_forkserver()

    watchdog = threading.Timer(timeout, expire)
    watchdog.daemon = True
    watchdog.start()
    failed: BaseException | None = None
    try:
        with _without_parent_main():
            proc.start()
    except (EOFError, ConnectionError) as exc:
        failed = exc
    finally:
        watchdog.cancel()
    if fired and failed is None:  # it forked just as the watchdog ended it, and the child with it
        proc.join()
    if fired or failed is not None:
        what = (f"did not start the child within {timeout:.0f} s, and was ended" if fired else
                f"ended before it started the child ({type(failed).__name__}: {failed or 'no pid came back'})")
        from gpu_budget.isolate.shadowed import standard_shadowed

        shadows = standard_shadowed()
        if shadows:  # the forkserver's own start imports them (it is handed this sys.path), whatever the preload
            named = "has the name of a standard-library module" if len(shadows) == 1 else \
                "have the names of standard-library modules"
            raise RuntimeError(f"the forkserver {what}: {', '.join(shadows)} {named}, ahead of the standard library "
                               "on sys.path (a test folder, pytest's pythonpath, PYTHONPATH), so the forkserver "
                               "imports it in the module's place; rename it")
        raise RuntimeError(f"the forkserver {what}: it imports gpu_budget_preload ({' '.join(preload) or 'empty'}) "
                           "before its first child, so one of those hangs or crashes on import (try `python -c "
                           "'import MODULE'` for each)")


def _end_forkserver() -> None:
    """SIGKILL the session's forkserver and what it started (its start's read of a pid then fails)."""
    from multiprocessing import forkserver as server

    pid = getattr(server._forkserver, "_forkserver_pid", None)
    if pid:
        kill_descendants(pid)
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _kill(proc) -> None:
    """_end_tree, then the child reaped."""
    _end_tree(proc.pid)
    proc.join()


def _end_tree(pid: int) -> None:
    """The child stopped first, so it reports no end of its own, then its descendants while they are still its
    descendants (one in a session of its own included), then itself. By pid: where its forkserver died,
    multiprocessing already counts it as ended and would send it nothing."""
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGSTOP)
    kill_descendants(pid)
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _end_leftovers(pgid: int) -> None:
    """SIGKILL what the ended child left in its process group: DataLoader workers orphaned by a kill, helpers.

    A killed child's forked workers can wait forever on pipes they hold of each
    other, and keep the forkserver alive with them; nothing of a measured run
    may outlive it on a shared runner.
    """
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _end_orphans() -> None:
    """SIGKILL what the ended child left that re-parented to the forkserver (a subreaper: forkserver_reaper.py): the
    descendants of a child that died before ending them, a daemon in a session of its own included, which the group
    kill misses. The forkserver runs one child at a time, so once it has ended every descendant is its leftover."""
    from multiprocessing import forkserver as server

    pid = getattr(server._forkserver, "_forkserver_pid", None)
    stat = procfs.read_stat(pid) if pid else None
    if stat is not None and stat.ppid == os.getpid():  # this session's forkserver, running (not a reused pid)
        kill_descendants(pid)


def probe(timeout: float = 120, preload: tuple[str, ...] = DEFAULT_PRELOAD, dispatch_mode: str = "avx2",
          start_timeout: float | None = None) -> Probed:
    """What a child from this forkserver sees: CUDA or not, GPU name and memory, CUDA and driver versions,
    and its setup (measure/host.py child_facts: the floor it starts at, the kernels' capability, the packages).
    `start_timeout`: the wait for the forkserver's first fork, its preload's imports (run_child)."""
    try:
        seen, ending = run_child(ChildRequest("probe", 1, preload=tuple(preload)), timeout, preload, dispatch_mode,
                                 start_timeout)
    except stopped_wait.WaitStopped as stop:  # a test's own timeout as the session reads the device: no case's row
        raise stop.cause from None
    device = events.first(seen, events.DeviceSeen)
    if device is None:
        error = events.first(seen, events.Failed)
        raise RuntimeError(f"probing the device failed: {error.traceback if error else _describe_ending(ending)}")
    return device.device


def prepare_assets(scenario: ScenarioJob | Mapping[str, Json], assets: Path, timeout: float, threads: int,
                   preload: tuple[str, ...] = DEFAULT_PRELOAD, dispatch_mode: str = "avx2",
                   device: str | None = None, say: Callable[[str], None] | None = None) -> None:
    """Build a scenario's assets once, in an unmeasured child, into `assets` (atomically). `scenario`: the job, or
    its JSON (Scenario.to_json). `say`: told once where another process is building them and this one waits."""
    if building.built(str(assets)):
        return
    job = ScenarioJob.coerce(scenario)

    def waiting(pid: int | None) -> None:
        say(waiting_line(job.name, assets, pid))

    with ExitStack() as locked:
        try:
            assets.parent.mkdir(parents=True, exist_ok=True)
            # another session building them: waited for, and said
            locked.enter_context(building.exclusive(str(assets), waiting if say is not None else None))
            if building.built(str(assets)):  # built by it meanwhile
                return
            made, held = building.build_folder(str(assets))  # held: a later build removes it where this one is killed
        except OSError as exc:  # a file in its place, a read-only or full disk: the case's error, naming the folder
            raise PrepareFailed(f"preparing assets for {job.name!r} failed: the assets folder {assets.parent} cannot be "
                                f"made or written ({exc.strerror or exc}); point GPU_BUDGET_ASSETS at a folder this user "
                                "can write") from None
        _build(assets, made, held, job, timeout, threads, preload, dispatch_mode, device)


def waiting_line(name: str, assets: Path, pid: int | None) -> str:
    """What a session says once as it waits on another process's build of a scenario's assets."""
    by = "another process" if pid is None else f"another process (pid {pid})"
    return f"gpu-budget: {name!r}: waiting for {by} to finish building its assets in {assets}"


def _build(assets: Path, made: str, held: int, job: ScenarioJob, timeout: float, threads: int,
           preload: tuple[str, ...], dispatch_mode: str, device: str | None) -> None:
    """Build `assets` in `made`, beside them, renamed over them once built (building.build_folder; `held`, its held
    file); called holding their build lock."""
    tmp = Path(made)
    try:
        _prepare_into(tmp, job, timeout, threads, preload, dispatch_mode, device)
        building.finish(made, str(assets))  # its marker beside it: the runner's ctx.assets holds what prepare made
    finally:  # what a failed (or beaten) prepare wrote: a checkpoint half saved is gigabytes, in a kept folder
        building.done(made, held)


def _prepare_into(tmp: Path, job: ScenarioJob, timeout: float, threads: int, preload: tuple[str, ...],
                  dispatch_mode: str, device: str | None) -> None:
    """Run the job's prepare in an unmeasured child writing into `tmp`; raise where it did not finish."""
    request = ChildRequest("prepare", threads, job, str(tmp), device=device)
    seen, ending = run_child(request, timeout, preload, dispatch_mode)
    if events.first(seen, events.Prepared) is None:
        error = events.first(seen, events.Failed)
        if error and error.cause == "missing-dependency":
            raise MissingDependency(error.message)
        detail = f" ({error.cause}): {error.message}\n{error.traceback}" if error else f": {_describe_ending(ending)}"
        raise PrepareFailed(f"preparing assets for {job.name!r} failed{detail}")


class PrepareFailed(RuntimeError):
    """A scenario's prepare did not finish (it raised, was killed, timed out): its case is an error, said with this."""


def _describe_ending(ending: ChildEnding) -> str:
    if ending.forkserver_lost:
        return ("its forkserver died while it ran (the kernel's OOM killer may pick it: it holds the preloaded "
                "libraries); the child was ended, with every process it started, and the next case starts from a new "
                "forkserver set up as the first")
    if ending.stopped_by:
        return (f"its wait was stopped after {ending.wall_seconds:.1f} s by an exception raised in the test's process "
                f"({ending.stopped_by}); the child was killed, with every process it started")
    if ending.timed_out:
        return f"timed out after {ending.wall_seconds:.0f} s and was killed, with every process it started"
    code = ending.exitcode
    if code is not None and code < 0:
        name = signal.Signals(-code).name
        hint = " (the kernel's OOM killer sends SIGKILL)" if -code == signal.SIGKILL else ""
        return f"killed by {name}{hint}"
    return f"exited with code {code} without a result"


def _open_at(seen: list) -> int | None:
    """Where in `seen` the phase a stopped child was in began: its last PhaseBegun that no PhaseEnded follows; None
    where none is open (it had begun none, or ended the last it began)."""
    at = None
    for i, e in enumerate(seen):
        if isinstance(e, events.PhaseBegun):
            at = i
        elif isinstance(e, events.PhaseEnded):
            at = None
    return at


def _phase_at_the_end(seen: list) -> str:
    """Where a child that was stopped had got to: the phase it was in (the last to begin), or the last one it ended;
    nothing for one that never started its run."""
    if events.first(seen, events.Started) is None:
        return ""
    at = _open_at(seen)
    if at is not None:
        return f"; it was in phase {seen[at].name!r}"
    ended = next((e for e in reversed(seen) if isinstance(e, events.PhaseEnded)), None)
    return f"; it had ended phase {ended.record.name!r} and begun no other" if ended else "; no phase had begun"


def _stopped_in(seen: list) -> str | None:
    """The phase a stopped child was in by name, as _phase_at_the_end says it; None where none was open."""
    at = _open_at(seen)
    return seen[at].name if at is not None and events.first(seen, events.Started) is not None else None


def _stderr_note(ending: ChildEnding) -> str:
    return f"; the last lines of its command's stderr:\n{ending.stderr_tail}" if ending.stderr_tail else ""


def _ranks_at_the_end(seen: list) -> str:
    """Where each rank of a launcher case was when its child was stopped: the ranks still running, by their last
    phase (the one that marked the fewest is named: under DDP the others wait for it in a collective; none where
    every running rank marked as many, as when one hangs inside a step the others wait in; the one still running where
    the others exited, which wait for nothing)."""
    last: dict[int, str | None] = {}
    marks: dict[int, int] = {}
    for e in seen:
        if isinstance(e, events.RankProgress):
            last[e.rank] = e.phase
            marks[e.rank] = marks.get(e.rank, 0) + (e.phase is not None)
    if not last:
        return ""
    running = sorted(r for r, phase in last.items() if phase is not None)
    where = ", ".join(f"rank {r} " + (f"in {last[r]}" if last[r] is not None else "exited") for r in sorted(last))
    if not running:
        return f"; the ranks: {where}"
    if len(running) == 1 and len(last) > 1:  # no rank waits for it in a collective: they exited
        return (f"; the ranks: {where}; rank {running[0]} alone was still running (the others had exited: the launcher "
                "waits for every rank)")
    fewest = min(marks[r] for r in running)
    behind = [r for r in running if marks[r] == fewest]
    if len(running) > 1 and len(behind) == len(running):  # a rank hung mid-step: the others wait at that step's mark
        return f"; the ranks: {where}; each marked as many phases, so the marks do not tell which rank the others wait for"
    who = f"rank {behind[0]} was" if len(behind) == 1 else f"rank {', '.join(map(str, behind))} were"
    it = "it" if len(behind) == 1 else "them"
    others = "the others" if len(running) == len(last) else "the others still running"
    return f"; the ranks: {where}; {who} the furthest behind ({others} wait for {it} in a collective)"


def measure(scenario: ScenarioJob | Mapping[str, Json], assets: Path, timeout: float, threads: int,
            preload: tuple[str, ...] = DEFAULT_PRELOAD, snapshot: SnapshotRequest | None = None,
            malloc: str = "steady", dispatch_mode: str = "avx2", tensors: bool = True, device: str | None = None,
            card: Card | None = None) -> Measurement:
    """Run the scenario (the job, or its JSON: Scenario.to_json) in a fresh measured child and return its Measurement.

    snapshot (a SnapshotRequest, or its older form {"path": ...}): on CUDA the
    child records the allocator's history through the run and dumps a memory
    snapshot to its path at its end or when it fails; the Measurement's
    `snapshot` is then that path, else None (the recorder's cost lands in this
    run's figures: the session asks for it only on a second, unjudged run).
    malloc: "steady" (glibc's thresholds fixed, child.steady_malloc) or
    "system" (glibc's defaults). dispatch_mode: the kernel-dispatch pin of the
    forkserver (dispatch.py). tensors: count the live tensor bytes of a CPU run
    (tensors.TensorPeak); False measures without the dispatch mode.
    device="cpu": the child does not see the GPU (CUDA_VISIBLE_DEVICES is
    emptied before any CUDA call), so the case trains on the CPU on a CUDA host too.
    card: on CUDA the measured processes run as on that card (measure/card_cap.py).
    """
    _check_malloc(malloc)
    request = ChildRequest("measure", threads, ScenarioJob.coerce(scenario), str(assets), snapshot,
                           malloc, tensors, device, card=card)
    return measure_request(request, timeout, preload, dispatch_mode)


def _check_malloc(malloc: str) -> None:
    if malloc not in MALLOC_MODES:
        raise ValueError(f"malloc mode {malloc!r}: expected one of {', '.join(MALLOC_MODES)}")


def measure_request(request: ChildRequest, timeout: float, preload: tuple[str, ...] = DEFAULT_PRELOAD,
                    dispatch_mode: str = "avx2") -> Measurement:
    """Run a measuring child for `request` (measure()'s) and turn what it said into a Measurement."""
    _check_malloc(request.malloc)
    try:
        seen, ending = run_child(request, timeout, preload, dispatch_mode)
    except stopped_wait.WaitStopped as stop:  # a test's own timeout: the case's row keeps what was measured so far
        if stop.ending is None:  # stopped before its child began
            raise
        raise stop.measured(_ended(stop.seen, stop.ending)) from stop.cause
    return _ended(seen, ending)


def _ended(seen: list[events.Event], ending: ChildEnding) -> Measurement:
    """The Measurement of a child that ended so: its result, else its failure with the figures it streamed."""
    dumped = events.first(seen, events.SnapshotDumped)
    snapshot = dumped.path if dumped else None
    result = events.first(seen, events.Finished)
    if result is not None:
        return measurement_of(result.summary, status="ok", info=result.info, wall_seconds=ending.wall_seconds,
                              exitcode=ending.exitcode, snapshot=snapshot)
    error = events.first(seen, events.Failed)
    if error is not None:
        failure, info = error.failure(), error.info
    else:
        kind = ("stopped" if ending.stopped_by else "timeout" if ending.timed_out else "killed" if ending.killed
                else "crash")
        failure = Failure(kind=kind, message=_describe_ending(ending) + _phase_at_the_end(seen)
                          + pipe_holders.said(ending.pipe_holders) + _ranks_at_the_end(seen) + _stderr_note(ending),
                          phase=_stopped_in(seen))
        info = next((e.info for e in reversed(seen) if isinstance(e, events.PhaseBegun) and e.info is not None), {})
    return measurement_of(_summary_so_far(seen, error, ending), status="error", error=failure, info=info,
                          wall_seconds=ending.wall_seconds, exitcode=ending.exitcode, snapshot=snapshot)


def _summary_so_far(seen: list[events.Event], error: events.Failed | None, ending: ChildEnding) -> Summary:
    """The figures of a child that did not finish: its failed command's, else its finished phases' and the phase it
    was in with what was streamed of it (_open_phase), with the peak seen so far (the parent's polling of a function
    case's child, and the tree as the child streamed it: a launcher's node's, its row being its worst rank's) and
    the GPU peaks each rank reported at its marks (lower bounds: a rank stopped mid-phase reported none of it)."""
    start = events.first(seen, events.Started)
    phases = [e.record for e in seen if isinstance(e, events.PhaseEnded)]
    stopped_in = _open_phase(seen) if error is None or not error.summary else None
    phases += [stopped_in] if stopped_in is not None else []
    summary = (error.summary if error is not None and error.summary else
               summarize(phases, cuda=bool(start and start.cuda), ram_method=start.ram_method if start else "vmhwm",
                         ram_tree_method=start.ram_tree_method if start else None,
                         rank_cuda=reported_gpu((e.rank, e.phase, e.cuda, e.gap) for e in seen
                                                if isinstance(e, events.RankProgress)) or None))
    if stopped_in is not None:
        summary = replace(summary, ram_tree_bound=_stopped_bound(stopped_in.name, summary.ram_tree_bound))
    polled = None if start and start.command else ending.polled_ram_peak  # a command's: not the measuring child's
    ram = max((v for v in (summary.peaks.ram, polled) if v), default=None)
    peaks = replace(summary.peaks, ram=ram)
    if start and start.ram_tree_method:  # the tree as the child streamed it; never below the main process alone
        streamed = [e.ram_tree for e in seen if isinstance(e, events.TreeFigure)]
        summary = replace(summary, ram_tree_method=start.ram_tree_method)
        if summary.node is not None:  # a launcher's whole tree is its node's; the row is its worst rank's (ranks.py)
            node = summary.node.peaks
            node = replace(node, ram_tree=max((v for v in (node.ram_tree, *streamed) if v), default=None))
            return replace(summary, peaks=peaks, node=replace(summary.node, peaks=node))
        peaks = replace(peaks, ram_tree=max((v for v in (peaks.ram_tree, *streamed, ram) if v), default=None))
    return replace(summary, peaks=peaks)


def _stopped_bound(name: str, ended: str | None) -> str:
    """How far the tree figure of a stopped child can be off: the phase it was stopped in is a lower bound (never
    read at an end; what the child streamed of it), the ended phases as their reads say."""
    return (f"phase '{name}', stopped before it ended, is a lower bound: the largest figure the child streamed of it "
            f"(a rise under {format_size(child._TreeStream.MIN_RISE)} since the last sent, or within "
            f"{child._TreeStream.MIN_SECONDS:.2f} s of it, may be missing)" + (f"; the phases before it: {ended}"
                                                                               if ended else ""))


def _open_phase(seen: list[events.Event]) -> PhaseRecord | None:
    """The phase a stopped child was in (begun last, never ended), with what it streamed of it: the largest tree and
    main-process figures sent since it began (child._TreeStream sends each phase's from its start), the tree's NVML
    figure on a GPU host and a CUDA process's own GPU peaks, lower bounds of its peaks, and under a launcher each rank's, so the row's worst rank is chosen over it too and the row's peaks,
    phases and steps stay one rank's (ranks.py); None where no phase was open or nothing of it was streamed. Its time
    is unknown (None)."""
    at = _open_at(seen)
    if at is None:
        return None
    begun = seen[at]
    figures = [e for e in seen[at + 1:] if isinstance(e, events.TreeFigure)]
    if not figures:
        return None
    main = max((f.ram for f in figures if f.ram is not None), default=None)
    ranks: dict[int, RankTree] = {}
    for f in figures:
        for rank, (ram, tree) in f.rank_figures().items():
            was = ranks.get(rank, RankTree(ram=0, ram_tree=0, processes=0))
            ranks[rank] = replace(was, ram=max(was.ram, ram), ram_tree=max(was.ram_tree, tree))
        for rank, vram in f.rank_vram_tree().items():
            was = ranks.get(rank, RankTree(ram=0, ram_tree=0, processes=0))
            ranks[rank] = replace(was, vram_tree=max(was.vram_tree or 0, vram))
    total = max(f.ram_tree for f in figures)
    vram_tree = max((f.vram_tree for f in figures if f.vram_tree is not None), default=None)
    own = {m: max((f.vram[m] for f in figures if f.vram and isinstance(f.vram.get(m), int)), default=None)
           for m in child.OWN_GPU}
    reading = TreeReading(private=total, ranks=dict(sorted(ranks.items()))) if ranks else None
    return PhaseRecord(name=begun.name, step=begun.step, ram_peak=main, ram_tree_peak=total, tree=reading,
                       vram_tree=vram_tree, **own)


def measurement_of(summary: Summary, status: str, info: Mapping[str, Json] | None = None, error: Failure | None = None,
                   wall_seconds: float | None = None, exitcode: int | None = None,
                   snapshot: str | None = None) -> Measurement:
    """A Measurement from the meter's Summary and what the ending adds (status, info, error, ...). Without a tree
    figure (a command ended before the first sample) the row says nothing of how it is read or how far off it is."""
    tree = summary.peaks.ram_tree is not None
    return Measurement(peaks=summary.peaks, phases={p.name: p for p in summary.phases}, step_peaks=summary.step_peaks,
                       steps=summary.steps, growth=dict(summary.growth), cuda=summary.cuda,
                       ram_method=summary.ram_method, ram_tree_method=summary.ram_tree_method if tree else None,
                       ram_tree_bound=summary.ram_tree_bound if tree else None, ranks=summary.ranks, node=summary.node,
                       status=status,
                       info=info if info is not None else {}, error=error, wall_seconds=wall_seconds, exitcode=exitcode,
                       snapshot=snapshot)
