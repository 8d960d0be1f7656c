"""The body of a measured (or preparing) child process.

Everything it learns goes out as JSON lines to a file, one line per finished
phase, so a child killed mid-run (OOM killer, timeout) still leaves what it
measured. The parent (forkserver.py) turns the lines into a Measurement.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

from gpu_budget import script
from gpu_budget.isolate import events, oom_killed
from gpu_budget.isolate.protocol import ChildRequest, ScenarioJob, SnapshotRequest, with_assets
from gpu_budget.measure import oom_kills
from gpu_budget.model.metric import REPORTED
from gpu_budget.model.result import GATE_FACTS, gate_fact_refusal
from gpu_budget.oom import OOM_KILLER, worker_killed

if TYPE_CHECKING:
    from gpu_budget.measure.facts import RunnerFacts
    from gpu_budget.measure.gpu_tree import GpuTree
    from gpu_budget.measure.tree import Running
    from gpu_budget.model.figures import Peaks

TORCH = "torch"
OWN_GPU = tuple(m.value for m in REPORTED)  # what the stream carries of a CUDA process's own GPU figures


def _pin_threads(threads: int) -> None:
    """Fix the thread count: with 2 cores and a busy neighbour an unpinned step ran 18x slower."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    if TORCH in sys.modules:  # preloaded by the forkserver; never imported here for nothing
        sys.modules[TORCH].set_num_threads(threads)


# glibc <malloc.h>: mallopt parameters, and the 128 KiB both thresholds start at
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _STEADY_BYTES = -1, -3, 128 * 1024


def steady_malloc() -> bool:
    """Fix glibc's mmap and trim thresholds at their 128 KiB starting values; False where that is not possible.

    glibc raises the mmap threshold (up to 32 MiB) each time a large block is
    freed, so which blocks stay in the heap after a free, and the RSS peak,
    depend on the order of frees: one S1 child measured 934-988 MiB over 12
    runs. Fixed, the same child measured within 0.1 MiB, across sessions too,
    and the peak is the program's own memory rather than the heap's history.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc: nothing to fix
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, _STEADY_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, _STEADY_BYTES))


def _tensor_peak(info: RunnerFacts):
    """A tensors.TensorPeak for a run whose code imported torch; None for a torch-free run (nothing to count).

    A torch without dispatch modes (a stand-in module) is measured without the
    count, and the row's info says why.
    """
    if TORCH not in sys.modules:
        return None
    try:
        from gpu_budget.measure.tensors import TensorPeak
    except ImportError as exc:
        info.gate("tensor_bytes", f"not counted: {exc}")
        return None
    return TensorPeak()


def _plant_tensor(nbytes: int):
    """A touched uint8 tensor of `nbytes` (None for 0): a planted regression that is tensor memory."""
    if not nbytes:
        return None
    torch = sys.modules[TORCH]
    return torch.ones(nbytes, dtype=torch.uint8)


def _platform_start_method() -> str:
    """Give this child the platform's default multiprocessing start method, as the runner's own program would have.

    A child started from the forkserver inherits "forkserver" as its default
    (multiprocessing forces the parent's method on its children), so a
    DataLoader's workers would be started that way: fresh interpreters that
    unpickle the dataset and import their own torch, where a Linux training
    process (Python < 3.14) forks workers that share them
    (memtests/test_s1_workers.py measures both).
    """
    import multiprocessing

    multiprocessing.set_start_method(None, force=True)  # forget the forced method: the platform default applies
    return multiprocessing.get_start_method()


def _device() -> str:
    from gpu_budget.measure.meter import cuda_available

    return "cuda" if cuda_available() else "cpu"


class _MemoryHistory:
    """The CUDA caching allocator's history through a run, dumped as a snapshot at its end or when it fails.

    Recorded with Python stacks only (C++ stacks cost far more); the dump is a
    pickle that pytorch.org/memory_viz or `python -m torch.cuda._memory_viz
    trace_plot FILE -o FILE.html` opens. The recorder's buffer and time land in
    the run's figures, so the session asks for it only on a second, unjudged
    run of a failing case (case._snapshot_run).
    """

    MAX_ENTRIES = 100_000

    def __init__(self, torch, path: str) -> None:
        self.torch, self.path = torch, path

    @classmethod
    def start(cls, request: SnapshotRequest | None) -> _MemoryHistory | None:
        torch = sys.modules.get(TORCH)
        if not request or torch is None:
            return None
        try:
            torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                                     max_entries=cls.MAX_ENTRIES)
        except Exception:  # noqa: BLE001  a torch without the recorder: measure without it
            return None
        return cls(torch, request.path)

    def finish(self, emit) -> None:
        # a snapshot helps to read a failure; it is never a failure of its own
        with contextlib.suppress(Exception):
            self.torch.cuda.memory._dump_snapshot(self.path)
            emit(events.SnapshotDumped(self.path))
        with contextlib.suppress(Exception):
            self.torch.cuda.memory._record_memory_history(enabled=None)


class _TreeStream:
    """The open phase's running figures as "tree" events, so a child killed mid-phase still leaves them: each phase's
    from its start (a figure below an earlier phase's is still the open phase's), on rises only, 20 a second at most;
    under a launcher each rank's with them, sent on a rank's rise too (another rank may fall as it rises). It begins
    each phase (`begun`, the meter's on_begin), so a figure read before that phase began is never sent as its own.
    On a GPU host (`gpu`: the tree's NVML poller, gpu_tree.py) the poller's running sums go with them, node's and
    ranks', sent on their rises too: the processes report their allocator's peaks only at a mark that ends a phase;
    where this process runs on CUDA (`own`: the meter's running_gpu) its own GPU peaks, read at each send's chance."""

    MIN_RISE, MIN_SECONDS = 2**20, 0.05

    def __init__(self, emit) -> None:
        self.emit, self.phase = emit, 0
        self.gpu: GpuTree | None = None
        self.own: Callable[[], Peaks] | None = None
        self._fresh()

    def _fresh(self) -> None:
        self.sent, self.main_sent, self.at = 0, 0, 0.0
        self.rank_sent: dict[int, int] = {}
        self.vram_sent: dict[int | str | None, int] = {}  # None: the tree's sum; a rank: its processes'; a metric: own

    def begun(self, name: str, step: int | None, info: dict | None = None) -> None:
        """A phase began (the tree's phase_start is done or under way): its figures are streamed from now on."""
        self.phase += 1
        self._fresh()
        self.emit(events.PhaseBegun(name, step, info))

    def __call__(self, running: Running) -> None:
        now = time.monotonic()
        if running.phase != self.phase or now - self.at < self.MIN_SECONDS:  # a poll of the phase before, or of one
            return  # not yet said to have begun; or within MIN_SECONDS of the last sent
        total, ranks = running.total, running.ranks
        gpu = self.gpu.running() if self.gpu is not None else None  # the GPU poller's, reset as this phase began
        vram = {None: gpu.total, **gpu.ranks} if gpu is not None and gpu.total is not None else {}
        own = _own_gpu(self.own()) if self.own is not None else {}  # the allocator's, reset as this phase began
        risen = any(tree >= self.rank_sent.get(rank, 0) + self.MIN_RISE for rank, (_, tree) in ranks.items())
        risen = risen or (running.main or 0) >= self.main_sent + self.MIN_RISE
        risen = risen or any(v >= self.vram_sent.get(k, 0) + self.MIN_RISE for k, v in [*vram.items(), *own.items()])
        if total >= self.sent + self.MIN_RISE or risen:
            self.sent, self.main_sent, self.at = max(self.sent, total), max(self.main_sent, running.main or 0), now
            for rank, (_, tree) in ranks.items():
                self.rank_sent[rank] = max(self.rank_sent.get(rank, 0), tree)
            for key, value in [*vram.items(), *own.items()]:
                self.vram_sent[key] = max(self.vram_sent.get(key, 0), value)
            shown = {str(rank): list(figures) for rank, figures in ranks.items()} if ranks else None
            rank_vram = {str(rank): value for rank, value in vram.items() if rank is not None} or None
            self.emit(events.TreeFigure(total, shown, running.main, vram.get(None), rank_vram, own or None))


def _own_gpu(peaks: Peaks) -> dict[str, int]:
    """A CUDA process's own GPU peaks as a "tree" event carries them: by metric, those read."""
    return {name: value for name in OWN_GPU if (value := getattr(peaks, name)) is not None}


def _hide_gpus() -> None:
    """device="cpu": this child must not see the GPU. CUDA reads the variable when it starts, which nothing
    in this process has done yet (neither the forkserver nor the parent touch CUDA)."""
    os.environ["CUDA_VISIBLE_DEVICES"] = ""


def _refuse_bad_fork() -> None:
    """A child forked from a forkserver that initialised CUDA cannot use CUDA: say so instead of failing later."""
    torch = sys.modules.get(TORCH)
    in_bad_fork = getattr(getattr(torch, "cuda", None), "_is_in_bad_fork", None)
    if in_bad_fork is not None and in_bad_fork():
        raise RuntimeError("CUDA was initialised in the forkserver before this child was forked, so CUDA cannot be "
                           "used here: a module of gpu_budget_preload calls CUDA at import (peft does, through "
                           "bitsandbytes); remove it from the preload and import it in the runner instead")


def _error_kind(exc: BaseException) -> str:
    from gpu_budget.oom import is_out_of_memory
    from gpu_budget.requires import MissingDependency

    if isinstance(exc, MissingDependency):
        return "missing-dependency"
    if isinstance(exc, MemoryError) or is_out_of_memory(type(exc).__name__, _said(exc)):
        return "oom"  # torch.OutOfMemoryError, or a CUDA call outside the caching allocator ("CUDA error: out of memory")
    return "exception"


def _measure_command(request: ChildRequest, job: ScenarioJob, assets: Path, malloc: str, emit) -> None:
    """A command scenario: start the user's command and measure its process tree (command.py).

    This process never touches CUDA: the command's processes report their own
    GPU figures, and the tree's NVML figures are polled here (gpu_tree.py) on
    a host whose NVML sees a GPU, unless the case is pinned to the CPU.
    """
    from gpu_budget.isolate import command
    from gpu_budget.isolate.lifecycle import become_subreaper
    from gpu_budget.measure.gpu_tree import GpuTree
    from gpu_budget.measure.meter import Meter

    subreaper = become_subreaper()  # a process of the command that daemonises stays in the tree, and is ended with it
    stream = _TreeStream(emit)
    meter = Meter(on_phase=lambda rec: emit(events.PhaseEnded(rec)), on_tree=stream, on_begin=stream.begun,
                  external=True, use_cuda=False)
    if request.device != "cpu":
        meter.gpu_tree = stream.gpu = GpuTree.open(meter.tree.members)
    emit(events.Started(os.getpid(), False, meter.ram_method, meter.ram_tree_method, subreaper, command=True))
    line = with_assets(job.command, str(assets))
    snapshot = request.snapshot.path if request.snapshot is not None else None
    try:
        ran = command.run(line, meter, request.threads, malloc, request.sockets,
                          on_rank=lambda rank, phase, cuda, gap: emit(events.RankProgress(rank, phase, cuda, gap)),
                          snapshot=snapshot,
                          card=request.card)
    except BaseException as exc:
        exc.meter = meter  # main() reports the error with the meter's info, after the phases it streamed
        if isinstance(exc, command.CommandFailed):  # the command failed, not this process: its figures stand
            exc.summary = meter.summary(rank_cuda=exc.rank_cuda)
            if snapshot and os.path.getsize(snapshot):
                emit(events.SnapshotDumped(snapshot))
        raise
    summary = meter.summary(rank_cuda=ran.rank_cuda, unread_steps=ran.unread_steps)
    meter.close()
    if ran.snapshot:
        emit(events.SnapshotDumped(ran.snapshot))
    emit(events.Finished(summary, {**meter.info, **ran.to_json(), "malloc": malloc}))


class _Run:
    """What a measured run has set up so far: the error path reports and closes it."""

    meter = None
    history: _MemoryHistory | None = None
    capped = None  # the card's cap it runs under (measure/card_cap.Capped), where the case names a card


class _FactsAtBegin:
    """Each phase's beginning, with the runner's facts (ctx.meter.info) where they changed since the last: a child
    killed outright later (the OOM killer's SIGKILL) sends no result or error, and its row keeps these."""

    def __init__(self, stream: _TreeStream, run: _Run) -> None:
        self.stream, self.run, self.sent = stream, run, {}

    def __call__(self, name: str, step: int | None) -> None:
        facts = _plain(self.run.meter.info) if self.run.meter is not None else {}
        changed = facts != self.sent
        if changed:
            self.sent = facts
        self.stream.begun(name, step, facts if changed else None)


def _probe(emit, preload: list[str]) -> None:
    from gpu_budget.measure.host import NOT_IMPORTED, Probed, child_facts, preload_seen
    from gpu_budget.measure.meter import device_info

    facts = child_facts()  # first: the floor is what the child starts with
    seen = preload_seen(preload)
    if NOT_IMPORTED in seen:  # else the parent's list stands (a probe of no preload list changes nothing)
        facts["preload"] = seen
    emit(events.DeviceSeen(Probed.from_json({**device_info(), "setup": facts})))


def _prepare(func, job: ScenarioJob, assets: Path, emit) -> None:
    from gpu_budget.declare.scenario import PrepareParams, RunContext

    params = PrepareParams(job.prepare_params, job.params, job.name)
    func(RunContext(job.scale, params, job.fixes, assets, _device()))
    emit(events.Prepared())


def _measure_runner(func, request: ChildRequest, job: ScenarioJob, assets: Path, malloc: str, start_method: str, run: _Run,
                    emit) -> None:
    """A runner scenario: run(ctx) under a Meter in this process, its tree read on a thread."""
    from gpu_budget.declare.fix_reads import Reads
    from gpu_budget.declare.scenario import RunContext
    from gpu_budget.isolate.lifecycle import become_subreaper
    from gpu_budget.measure.meter import Meter, running_gpu

    subreaper = become_subreaper()  # a helper whose parent exits (a daemonising subprocess) stays in the tree
    stream = _TreeStream(emit)
    meter = run.meter = Meter(on_phase=lambda rec: emit(events.PhaseEnded(rec)), on_tree=stream,
                              on_begin=_FactsAtBegin(stream, run))
    stream.own = (lambda: running_gpu(meter)) if meter.use_cuda else None
    run.capped = meter.run_as(request.card)
    meter.tensors = None if meter.use_cuda or not request.tensors else _tensor_peak(meter.info)
    reads = Reads(job.fixes, job.fix_params)
    ctx = RunContext(job.scale, reads.params(job.params), reads.fixes(), assets, "cuda" if meter.use_cuda else "cpu", meter)
    emit(events.Started(os.getpid(), bool(meter.use_cuda), meter.ram_method, meter.ram_tree_method, subreaper))
    # planted regressions (prove the gate can fail): retained, touched bytes for the whole run, as a bytes
    # object (host RAM sees it) or as a tensor made under the tracker (host RAM and tensor bytes see it)
    planted = b"\x01" * int(job.plant_bytes)  # noqa: F841
    run.history = _MemoryHistory.start(request.snapshot) if meter.use_cuda else None
    script.mark_with(meter.start)  # gpu_budget.phase() and step() in the runner start the meter's phases
    counted = oom_kills.read()  # as around a command (command.run): a helper the OOM killer ended leaves no other trace
    with meter.tensors if meter.tensors is not None else contextlib.nullcontext():
        planted_tensor = _plant_tensor(int(job.plant_tensor_bytes))  # noqa: F841
        meter.lead_in()  # what the runner does before its first phase: "run", as a command's
        try:
            returned = func(ctx)
        except (Exception, SystemExit) as exc:
            _killed_as_it_failed(counted, meter, exc)
            raise
        info = reads.noted(_facts(returned, job.run))  # a fix it never read is not applied
    meter.stop()
    meter.whole_run()  # a runner that marked no phase is one phase, "run"
    summary = meter.summary()
    info = _helpers_killed(counted, meter, summary, info)
    meter.close()
    if run.history is not None:
        run.history.finish(emit)
    emit(events.Finished(summary, _plain({**meter.info, **info, "malloc": malloc, "start_method": start_method})))


class HelperKilled(Exception):
    """run(ctx) returned, but the kernel's OOM killer ended a process of its tree (isolate/oom_killed.py)."""

    kind = "killed"


def _helpers_killed(counted, meter, summary, info: dict) -> dict:
    """`info`, with a note naming a process of the tree found killed by SIGKILL; HelperKilled (its figures kept)
    where the kernel's count of OOM kills rose and a process of the tree was found gone."""
    killed = oom_killed.after_case(counted, meter.tree)
    if killed.failure:
        exc = HelperKilled(f"run(ctx) returned, but {killed.failure}")
        exc.summary = summary
        raise exc
    return {**info, "notes": [killed.note]} if killed.note else info  # "notes" is a gate fact: run(ctx) has none


def _killed_as_it_failed(counted, meter, exc: BaseException) -> None:
    """HelperKilled, from `exc`, where run(ctx) raised (or called sys.exit) after the kernel's OOM killer ended a
    process of its tree: the kill is the case's end, as for a run(ctx) that returned (a pool that broke on its killed
    worker raises), not the error it led to. An out-of-memory error of its own, and a DataLoader worker's SIGKILL,
    say so already."""
    if _error_kind(exc) != "exception" or _killed_worker(exc) is not None:
        return
    killed = oom_killed.after_case(counted, meter.tree)
    if killed.failure:
        raise HelperKilled(f"run(ctx) failed ({type(exc).__name__}: {_said(exc)}), and {killed.failure}") from exc


def _plain(facts: Mapping) -> dict:
    """`facts` with every key, nested ones too, made its str (a LoRA target's tuple): JSON keys are strings, and a key
    the event line cannot write would lose the whole line, a failed run's error with it. Values that are no JSON go
    as their str when the line is written (events.encode), and so does a number JSON has none for (a diverged run's
    NaN loss): json would write NaN, which no strict reader of the report reads."""
    def plain(value: object) -> object:
        if isinstance(value, Mapping):
            return {k if isinstance(k, str) else str(k): plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        return value

    return cast("dict", plain(facts))


def _facts(returned: object, ref: str | None) -> dict:
    """What run(ctx) returned, as the row's facts: a dict (a mapping), or None for none; anything else is the runner's
    mistake, named here rather than by the merge it would break."""
    if returned is None:
        return {}
    if isinstance(returned, Mapping):
        taken = [str(key) for key in returned if key in GATE_FACTS]
        if taken:
            raise TypeError(gate_fact_refusal(f"{ref} returned facts named", taken))
        return dict(returned)
    shown = repr(returned)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    article = "an" if type(returned).__name__[0] in "aeiou" else "a"
    raise TypeError(f"{ref} returned {article} {type(returned).__name__} ({shown}): expected a dict of facts for the "
                    "report, or None")


def _killed_worker(exc: BaseException | None) -> str | None:
    """The pid of the DataLoader worker whose SIGKILL `exc` or an error it was raised from tells (torch raises "exited
    unexpectedly" from the "is killed by signal: Killed." its SIGCHLD handler raised), or None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        pid = worker_killed(_said(exc))
        if pid is not None:
            return pid
        exc = exc.__cause__ or exc.__context__
    return None


def _said(exc: BaseException) -> str:
    """What a failure's one line says of `exc`: its message, else what it is (a bare MemoryError() says nothing, a
    sys.exit(3) says "3", and an exception whose str() raises would lose the whole report)."""
    name = type(exc).__name__
    if isinstance(exc, SystemExit):
        return f"the run called sys.exit({exc.code!r}) instead of returning"
    try:
        return str(exc) or name
    except Exception as failed:  # noqa: BLE001  the failure must still go out
        return f"{name} (its str() raised {type(failed).__name__}: {failed})"


def _report_failure(exc: BaseException, run: _Run, emit) -> None:
    """A crash is data: the error first, then what was measured so far.

    The error goes out before anything touches CUDA again: after a sticky CUDA
    error (an illegal memory access, say) every later CUDA call fails too, and
    the message must not be lost to it.
    """
    meter = getattr(exc, "meter", run.meter)
    cause = getattr(exc, "kind", None) or _error_kind(exc)
    message = _said(exc)
    worker = _killed_worker(exc) if cause == "exception" else None
    if worker is not None:  # as a command case's script that exits on it (command._ended)
        cause, message = "killed", f"ended as its DataLoader worker (pid {worker}) was killed by SIGKILL{OOM_KILLER}: {message}"
    if cause == "oom" and run.capped is not None and meter is not None:
        message = run.capped.out_of_memory(*meter.open_phase, message)
    emit(events.Failed(
        cause=cause,
        type=f"{type(exc).__module__}.{type(exc).__qualname__}",
        message=message[:2000],
        traceback=traceback.format_exc()[-8000:],
        info=_plain(meter.info) if meter is not None else {},
        summary=getattr(exc, "summary", None),
    ))
    if meter is not None:
        with contextlib.suppress(Exception):
            meter.stop()  # the open phase, with whatever can still be read
            meter.whole_run()  # a runner that failed before its first mark: its lead-in, "run"
        with contextlib.suppress(Exception):
            meter.close()
    if run.history is not None:
        run.history.finish(emit)


def _function(ref: str) -> object:
    """The function `ref` ("module:function") names, imported here. Its module not found on this child's sys.path
    is said with the path and the likely cause: pytest imported it by its file, putting no folder on sys.path."""
    from gpu_budget.declare.scenario import resolve_ref

    try:
        return resolve_ref(ref)
    except ModuleNotFoundError as exc:
        module = ref.partition(":")[0]
        if not exc.name or not (module == exc.name or module.startswith(exc.name + ".")):
            raise  # a module the runner's own module imports: its own message says it
        folders = ", ".join(p for p in sys.path if p and not p.startswith((sys.prefix, sys.base_prefix)))
        raise ModuleNotFoundError(
            f"{ref}: No module named {exc.name!r} on the measured child's sys.path, the pytest process's "
            f"({folders or 'no folder of the project'}): a module pytest imported by its file (a test module or "
            "conftest.py under --import-mode=importlib, or one whose folder is not on sys.path) is not found there; "
            "put the runner in a module on sys.path (pytest's `pythonpath` ini option adds a folder)",
            name=exc.name) from exc


def _outlive_hangup() -> None:
    """Not ended by the SIGHUP its group gets, orphaned with a stopped process in it, once the forkserver is gone
    (lifecycle.outlive_hangup): it ends its descendants first."""
    from gpu_budget.isolate.lifecycle import outlive_hangup

    outlive_hangup()


def _end_with_session() -> None:
    """Watch the session that asked for this child (the forkserver's client, not its parent): a session SIGKILLed or
    OOM-killed mid-case runs no cleanup, and the forkserver stays up while a child holds its pipe."""
    import multiprocessing

    from gpu_budget.isolate.lifecycle import end_with, owner_of

    session = multiprocessing.parent_process()
    if session is not None:
        end_with(owner_of(session.pid))


def main(request: ChildRequest, out_path: str) -> None:
    """Run the request's scenario's prepare or run function (or its command), or probe, and stream the outcome to
    out_path."""
    out = open(out_path, "a", buffering=1)  # noqa: SIM115  closed in the finally below, after the error is out
    lock = threading.Lock()  # the tree's thread streams too

    def emit(event: events.Event) -> None:
        line = events.encode(event)
        with lock:
            out.write(line)
            out.flush()

    job, mode, run = request.scenario, request.mode, _Run()
    try:
        if request.environ is not None:  # the session's as it asked, not the forkserver's as it started
            os.environ.clear()
            os.environ.update(request.environ)
        os.setpgid(0, 0)  # its own process group: what it leaves running is ended with it (forkserver.run_child)
        _end_with_session()
        _outlive_hangup()
        if request.device == "cpu":
            _hide_gpus()
        _refuse_bad_fork()
        if mode == "probe":
            return _probe(emit, list(request.preload))
        malloc = request.malloc
        if malloc == "steady" and not steady_malloc():
            malloc = "system (mallopt unavailable)"
        assets = Path(request.assets)
        if mode == "measure" and job.command is not None:
            return _measure_command(request, job, assets, malloc, emit)
        # import the scenario's module (and torch) first, so pinning reaches torch and nothing is measured of it
        func = _function(job.prepare if mode == "prepare" else job.run)
        _pin_threads(request.threads)
        start_method = _platform_start_method()
        if mode == "prepare":
            return _prepare(func, job, assets, emit)
        _measure_runner(func, request, job, assets, malloc, start_method, run, emit)
    except BaseException as exc:  # noqa: BLE001  a crash is data
        _report_failure(exc, run, emit)
    finally:
        if mode == "measure":  # nothing it started outlives it, a daemon in its own session included
            with contextlib.suppress(Exception):
                from gpu_budget.isolate.lifecycle import kill_descendants

                kill_descendants(os.getpid())
        out.close()
        _leave()


def _leave() -> None:
    """End this process now that its outcome is out. Returning would end it through multiprocessing's exit, which
    joins every non-daemon thread the run left running (an executor's worker never shut down, a writer's): the
    finished case would wait for its timeout, then be judged on its figures as if nothing had happened."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)
