"""What the gate installs in each Python process of a command it measures (the `_hook/sitecustomize.py` there).

- Hugging Face Trainer: when `transformers.trainer` is first imported, the
  gate's callback joins its DEFAULT_CALLBACKS, so every Trainer of the script
  marks its optimizer steps and evaluations as phases (hf_trainer.py) with no
  edit to the script. Nothing of transformers is imported before the script
  imports it.
- Exit reports: as the process exits (atexit; for a forked multiprocessing
  child, multiprocessing's own exit hook), its VmHWM since the tree's last read,
  its shared pages, RSS and shared-memory pages go to the measuring process, so
  what it did after the last poll is counted (tree.py).
- GPU figures: a process whose own code initialised CUDA sends its caching
  allocator's peaks with each phase mark and its exit report (script.with_cuda),
  with NVML's figure of the process (ProcessDevice). Nothing here initialises
  CUDA. Where the gate asks for a memory snapshot (GPU_BUDGET_SNAPSHOT), the
  allocation recorder starts when the process's own code initialises CUDA
  (torch.cuda._lazy_call) and is dumped as the process exits.
- An uncaught exception is named to the measuring process before Python prints
  it (an out-of-memory error among them, with the phase it happened in); where
  the script's own excepthook took its place, at its exit. The command's own
  process says at once that the hook runs in it (a message of no kind), so a
  script that leaves by os._exit is not reported as one the hook missed. Under
  a launcher (RANK in the environment) `torch.distributed.init_process_group`
  (wrapped when its module is first imported) says which process group the
  rank joined, and accelerate's PartialState how many processes it trains
  with, so ranks that each train alone are reported, not passed as N runs that
  happen to pass.

Installed only where GPU_BUDGET_SOCKET is set; the plugin never runs it in its own process.
"""

from __future__ import annotations

import atexit
import importlib.machinery
import os
import sys

from gpu_budget import script
from gpu_budget.measure import procfs
from gpu_budget.oom import is_out_of_memory

TRAINER_MODULE = "transformers.trainer"
C10D_MODULE = "torch.distributed.distributed_c10d"
ACCELERATE_STATE = "accelerate.state"
TORCH_MODULE = "torch"
MP_MODULE, MP_UTIL_MODULE = "multiprocessing", "multiprocessing.util"


class _Watch:  # a meta path finder (importlib.abc is not imported: it costs more than this hook)
    """Finds the watched modules as the path finder would, and runs each one's hook once the module has run."""

    def __init__(self, hooks: dict | None = None) -> None:
        if hooks is None:  # the gate's own
            hooks = {TRAINER_MODULE: attach, C10D_MODULE: watch_group, ACCELERATE_STATE: watch_accelerate}
            if os.environ.get(script.SNAPSHOT_VAR) or os.environ.get(script.CARD_VAR):
                hooks[TORCH_MODULE] = watch_torch
        self.hooks = hooks

    def find_spec(self, fullname, path, target=None):
        after = self.hooks.get(fullname)
        if after is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real = spec.loader

        class _Loader:
            def create_module(self, spec):
                return real.create_module(spec)

            def exec_module(self, module):
                real.exec_module(module)
                after(module)

        spec.loader = _Loader()
        return spec


def attach(trainer_module) -> None:
    """Add the gate's callback class to the Trainer's default callbacks (once)."""
    from gpu_budget.measure.hf_trainer import gate_callback_class

    cls = gate_callback_class()
    if cls not in trainer_module.DEFAULT_CALLBACKS:
        trainer_module.DEFAULT_CALLBACKS.append(cls)


def watch_group(c10d) -> None:
    """Tell the measuring process when this process joins a process group, and of what size: ranks a launcher
    started that never call init_process_group each train alone (command.py reports them)."""
    real = c10d.init_process_group
    if script.rank() is not None:  # this rank could form a group: command.py holds it to that
        script.send({"group": 0, "rank": script.rank()})

    def init_process_group(*args, **kwargs):
        out = real(*args, **kwargs)
        try:
            script.send({"group": c10d.get_world_size(), "backend": str(c10d.get_backend()), "rank": script.rank()})
        except Exception:  # noqa: BLE001, S110  the user's run goes on; the gate then reports no group formed
            pass
        return out

    init_process_group.__wrapped__ = real
    init_process_group.__doc__ = real.__doc__
    c10d.init_process_group = init_process_group


def watch_accelerate(state) -> None:
    """Tell the measuring process how many processes accelerate trains with in this rank: under a launcher of N
    ranks, 1 means each rank trains alone (on a host without CUDA, without ACCELERATE_USE_CPU=true), though
    accelerate may still have formed a process group of N."""
    cls = state.PartialState
    real = cls.__init__

    def __init__(self, *args, **kwargs):
        real(self, *args, **kwargs)
        try:
            if script.rank() is not None:
                script.send({"accelerate": str(self.distributed_type), "processes": int(self.num_processes),
                             "rank": script.rank()})
        except Exception:  # noqa: BLE001, S110  the user's run goes on
            pass

    __init__.__wrapped__ = real
    cls.__init__ = __init__


class _Recorder:
    """The CUDA caching allocator's history in this process, on a recording run: started when the process's own
    code initialises CUDA, dumped as it exits (a pickle pytorch.org/memory_viz opens)."""

    MAX_ENTRIES = 100_000
    on = False

    @classmethod
    def start(cls) -> None:
        try:
            torch = sys.modules[TORCH_MODULE]
            torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                                     max_entries=cls.MAX_ENTRIES)
            cls.on = True
        except Exception:  # noqa: BLE001, S110  never fail the user's CUDA initialisation: the run goes unrecorded
            pass

    @classmethod
    def dump(cls) -> None:
        if not cls.on:
            return
        try:
            sys.modules[TORCH_MODULE].cuda.memory._dump_snapshot(f"{os.environ[script.SNAPSHOT_VAR]}.{os.getpid()}")
        except Exception:  # noqa: BLE001, S110  a snapshot helps to read a failure; it is never one of its own
            pass


def watch_torch(torch) -> None:
    """As this process's own code initialises CUDA: cap its allocator as on the case's card, and on a recording run
    start the allocation recorder."""
    calls = [_cap_card] if os.environ.get(script.CARD_VAR) else []
    calls += [_Recorder.start] if os.environ.get(script.SNAPSHOT_VAR) else []
    for call in calls:
        try:
            torch.cuda._lazy_call(call)
        except Exception:  # noqa: BLE001, S110  a torch without lazy calls: uncapped (the gate says so), unrecorded
            pass


def _cap_card() -> None:
    """Cap this process's caching allocator as on the case's card (measure/card_cap.py), once CUDA is up and before
    it allocates; the measuring process hears the cap, or why it could not be applied (the case then fails)."""
    try:
        from gpu_budget.measure import card_cap
        from gpu_budget.model.card import Card

        torch = sys.modules[TORCH_MODULE]
        device = torch.cuda.current_device()
        capped = card_cap.cap(torch, device, Card.from_env(os.environ[script.CARD_VAR]), card_cap.nvml_reader(torch, device))
        script.send({"card": capped.note, "rank": script.rank()})
    except Exception as exc:  # noqa: BLE001  never fail the user's CUDA initialisation: the gate fails the case
        script.send({"card_failed": f"{type(exc).__name__}: {exc}", "rank": script.rank()})


def _report_failure(kind, value, tb) -> None:
    """An uncaught exception: named to the measuring process (an out-of-memory error as one), then Python's own
    report."""
    try:
        _send_failure(kind, value)
    finally:
        _excepthook(kind, value, tb)


def _send_failure(kind, value) -> None:
    """Name this process's uncaught exception to the measuring process, once."""
    global _failed
    if _failed == os.getpid():
        return
    _failed = os.getpid()
    text = f"{kind.__name__}: {value}"[:500]
    script.send({"failed": text, "oom": is_out_of_memory(kind.__name__, str(value)), "rank": script.rank()})


_excepthook = sys.excepthook
_reported: int | None = None  # the pid that sent its exit report (once per process)
_failed: int | None = None  # the pid that named its uncaught exception (once per process)


def report_exit() -> None:
    """This process's VmHWM (since the tree's last read), shared pages, RSS, shared-memory pages (RssShmem: a
    segment it close()d before exiting is in its VmHWM, no longer in its shared pages) and file pages (RssFile: so
    is a file it unmapped), to the measuring process, once."""
    global _reported
    if _reported == os.getpid():
        return
    _reported = os.getpid()
    uncaught = getattr(sys, "last_value", None)  # set by Python as it reports one, before it calls sys.excepthook
    if uncaught is not None:  # named here where the script's own excepthook took the place of _report_failure (a
        _send_failure(type(uncaught), uncaught)  # typer app's): once, as _report_failure names it
    status, shared = procfs.status("self"), procfs.read_shared("self")
    if status is not None:
        mp = sys.modules.get(MP_MODULE)  # a worker multiprocessing started is not its rank's own process
        own = mp is None or mp.parent_process() is None
        message = {"exit": status.hwm, "shared": shared, "rss": status.rss, "shmem": status.rss_shmem,
                   "file": status.rss_file, "rank": script.rank(), "own": own}
        if own:
            script.with_cuda(message)  # its last phase's GPU peaks
        script.send(message)
        if own:
            _Recorder.dump()


class ProcessDevice:
    """This process's own memory on its GPU as NVML sees it (`vram_device`), beside the allocator's peaks it reports.

    Opened at the process's first report after it initialised CUDA (phase marks
    and the exit report call it through script.cuda_peaks), on the device it
    uses then: NVML is matched to the process by pid, else as the only process
    on its device (measure/nvml.py; a rank per GPU, as placement gives). From
    then a sampler keeps each phase's peak; the phase in which CUDA was first
    used is read once, at its end (a lower bound: the caching allocator hands
    memory back only on empty_cache). No figure where NVML is absent or matches
    nothing. `uuid`: the device's NVML id, sent with the figures so the
    measuring process knows which GPU the tree uses (measure/gpu_tree.py).
    """

    def __init__(self) -> None:
        self.sampler = None  # an nvml.PeakSampler once opened
        self.opened = False
        self.uuid: str | None = None

    def __call__(self, torch) -> dict[str, int]:
        if not self.opened:
            self.opened = True
            from gpu_budget.measure import nvml  # here: a process that never reports CUDA pays nothing for it

            memory, _ = nvml.open_for(torch, torch.cuda.current_device(), None)
            if memory is not None:
                self.uuid = memory.uuid
                self.sampler = nvml.PeakSampler(memory.read)
        if self.sampler is None:
            return {}
        peak = self.sampler.peak()
        self.sampler.reset()
        return {} if peak is None else {"vram_device": peak}


class _Keep:
    """What multiprocessing's after-fork registry holds weakly for our entry."""


_KEEP = _Keep()


def _arm(_obj) -> None:
    sys.modules[MP_UTIL_MODULE].Finalize(None, report_exit, exitpriority=-1000)


def _after_fork_in_child() -> None:
    """A forked multiprocessing child leaves through os._exit after multiprocessing's finalizers, not atexit; and its
    bootstrap clears the finalizers it inherited before it runs the after-fork registry, so the exit report is armed
    from there (a plain os.fork() child never runs that registry, and is read by the polls only)."""
    util = sys.modules.get(MP_UTIL_MODULE)
    if util is not None:
        util.register_after_fork(_KEEP, _arm)


def after_import(name: str, hook) -> None:
    """Run hook(module) once module `name` has run in this process (at once where it already has): a project's own
    marks for a training loop the gate does not know, from its own sitecustomize (memtests' FunASR marks)."""
    if name in sys.modules:
        hook(sys.modules[name])
    else:
        sys.meta_path.insert(0, _Watch({name: hook}))


def install() -> None:
    watch = _Watch()
    for name in [name for name in watch.hooks if name in sys.modules]:
        watch.hooks.pop(name)(sys.modules[name])
    sys.meta_path.insert(0, watch)
    sys.excepthook = _report_failure
    script._device = ProcessDevice()
    atexit.register(report_exit)
    os.register_at_fork(after_in_child=_after_fork_in_child)
    if os.environ.get(script.PARENT_VAR) == str(os.getppid()):
        script.send({})  # the command's own process: the hook runs in it, though it may leave by os._exit or exec
