"""Phases and steps marked from inside a user's own script, for the gate that runs it as a command.

`gpu_budget.phase("load")` and `gpu_budget.step()` tell the measuring process
where a phase begins; a phase lasts until the next one begins or the process
exits. Outside the gate (no GPU_BUDGET_SOCKET in the environment) both return
at once and import nothing, so a script keeps them in when it runs on its own.
Under the gate each call waits for the measuring process to close the phase
before, so the phase boundary is where the call is, not where a poll happened
to fall.

Only the command's own process marks phases; a call from another process of
its tree (a DataLoader worker, say) is answered and ignored.

In a function case's measured child (run(ctx)) there is no socket: there the
two start the meter's phases directly, as ctx.meter.start does (`mark_with`),
so a runner that marks its loop with them is measured per step too.
"""

from __future__ import annotations

import _thread  # loaded in every Python process already: its lock costs one that never marks nothing
import operator
import os
import sys

TYPE_CHECKING = False  # typing's own flag, without importing typing in every process of a gated command
if TYPE_CHECKING:
    # one JSON message to the measuring process (a phase mark, a process group or launcher seen, a failure, an exit
    # report: isolate/command.py reads them), or its answer; "cuda" holds the GPU peaks (cuda_peaks)
    Message = dict[str, str | int | bool | None | dict[str, int]]

SOCKET_VAR = "GPU_BUDGET_SOCKET"  # set by the gate for the command it measures (command.py)
CARD_VAR = "GPU_BUDGET_CARD"  # set by the gate for a case with card=: the card its processes run as on (model/card.py)
SNAPSHOT_VAR = "GPU_BUDGET_SNAPSHOT"  # set on a recording run: where a process dumps its memory snapshot (+ "."+pid)
PARENT_VAR = "GPU_BUDGET_PARENT"  # set by the gate: the pid that starts the command, whose child its own process is

_conn = None  # a socket.socket once connected
_conn_pid: int | None = None
_answers = b""  # what was read past the answer taken last (one answer per message, in order)
# One message and its answer at a time: threads that mark (or report) at once would read each other's answers, and
# one would wait on its answer for ever. Reentrant: a signal handler that marks while its thread sends goes on.
_lock = _thread.RLock()
_step = 0
_last_step = 0  # the step number this process marked last, by step(), phase() or the gate's Trainer callback
_trainer_open: tuple[str, int] | None = None  # the step phase a Trainer's callback began, open since: step() there is it
_open: str | None = None  # the name of the phase this process began last (a Trainer's callback joins one it repeats)
_broken = False
_device = None  # set by the gate's hook: reads this process's NVML figure (autohook.ProcessDevice)
_local = None  # (pid, the meter's start) in a function case's measured child: set by mark_with


def _new_lock() -> None:
    """A fork's child gets a lock of its own: one another thread held at the fork would stay held in it."""
    global _lock
    _lock = _thread.RLock()


os.register_at_fork(after_in_child=_new_lock)


def active() -> bool:
    """Whether this process runs under the gate."""
    return bool(os.environ.get(SOCKET_VAR))


def send(message: Message) -> Message | None:
    """Send one message to the measuring process and wait for its answer; None outside the gate.

    A forked process opens its own connection (a connection is never shared
    across a fork). If the measuring process cannot be reached, say so once on
    stderr and go on unmeasured: the script is not failed by its meter.
    """
    global _conn, _conn_pid, _answers, _broken
    path = os.environ.get(SOCKET_VAR)
    if not path or _broken:
        return None
    import json  # here, not at the top: a gated process that never marks a phase pays nothing for them
    import socket
    with _lock:
        try:
            if _conn is None or _conn_pid != os.getpid():
                _conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                _conn.connect(path)
                _conn_pid, _answers = os.getpid(), b""
            _conn.sendall((json.dumps({"pid": os.getpid(), **message}) + "\n").encode())
            while b"\n" not in _answers:
                chunk = _conn.recv(4096)
                if not chunk:
                    raise ConnectionError("the measuring process closed the connection")
                _answers += chunk
            answer, _, _answers = _answers.partition(b"\n")
            return json.loads(answer)
        except (OSError, ValueError) as exc:
            if not _broken:
                _broken = True
                print(f"gpu_budget: cannot reach the measuring process at {path} ({exc}); phases are not marked",
                      file=sys.stderr)
            return None


def rank() -> int | None:
    """The RANK a launcher (torchrun, accelerate launch) gave this process; None outside one."""
    try:
        return int(os.environ["RANK"])
    except (KeyError, ValueError):
        return None


def cuda_peaks() -> dict[str, int] | None:
    """This process's CUDA allocator peaks since the last call (then reset), where it has initialised CUDA; None
    where it has not (nothing here initialises it, or imports torch). Under the gate, NVML's figure of this
    process on its device is added (`vram_device`)."""
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_initialized():
            return None
        out = {"vram_allocated": int(torch.cuda.max_memory_allocated()),
               "vram_reserved": int(torch.cuda.max_memory_reserved())}
    except Exception:  # noqa: BLE001  a broken CUDA context: the figure is missing, the user's run goes on
        return None
    try:
        if _device is not None:
            out.update(_device(torch))
    except Exception:  # noqa: BLE001, S110  NVML's figure is reported beside the allocator's, never needed
        pass
    try:
        torch.cuda.reset_peak_memory_stats()
    except Exception:  # noqa: BLE001  as above
        return None
    return out


def with_cuda(message: Message) -> Message:
    """`message` with this process's GPU peaks of the phase that ends with it, and its GPU's NVML id, where it
    has initialised CUDA (the measuring process gives them to the phase, or to the rank: command.py)."""
    peaks = cuda_peaks()
    if peaks is not None:
        message["cuda"] = peaks
        uuid = getattr(_device, "uuid", None)
        if uuid:
            message["gpu"] = uuid
    return message


def step_number(step: object) -> int | None:
    """`step` as the whole number a phase records (None: not a step): an int, or what stands for one (numpy's
    integers, a 0-d integer tensor); text, a fraction, a bool or a number below 0 (no training has such a step)
    raises, naming it."""
    if step is None:
        return None
    number = None
    if not isinstance(step, bool):
        try:
            number = operator.index(step)  # type: ignore[arg-type]
        except TypeError:
            pass
    if number is None or number < 0:
        raise ValueError(f"step {step!r}: expected a whole number >= 0 (the optimizer step the phase is), or None")
    return number


def phase_name(name: object) -> str:
    """`name` as a phase's name (the report's phase table writes it); what is no non-empty string raises, naming it."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"phase name {name!r}: expected a non-empty string")
    return name


def gated_phase_name(name: object) -> str:
    """`name` as phase_name takes it, and one line of text with no space at either end, as a measure() label must be:
    "load " reads as "load" in every message and table (a baseline's "load" then said unreached beside it) and a
    line break breaks the lines that name it. Checked under the gate only: outside it phase() is a no-op."""
    name = phase_name(name)
    if not name.isprintable() or name != name.strip():
        raise ValueError(f"phase name {name!r}: expected one line of text with no space at either end: it names the "
                         "phase in the table, the messages and the baseline entry")
    return name


def mark_with(start) -> None:
    """In a function case's measured process: phase() and step() call `start(name, step, gap=...)` (the meter's start), from
    this process only (a process it forks marks nothing); None: back to the socket. The step count starts anew."""
    global _local, _step, _last_step, _trainer_open, _open
    _local = None if start is None else (os.getpid(), start)
    _step = _last_step = 0
    _trainer_open = _open = None


def marks_to(meter: object) -> bool:
    """Whether phase() and step() in this process start `meter`'s phases (a function case's ctx.meter)."""
    return _local is not None and _local[0] == os.getpid() and getattr(_local[1], "__self__", None) is meter


def trainer_began(name: str, number: int | None) -> None:
    """A Trainer's callback (measure/hf_trainer.py) began phase `name` in this process: a step() of the user's
    own in that step (from a TrainerCallback of theirs) is that step, not another; a step() after the Trainer goes
    on from its steps."""
    global _trainer_open, _last_step
    _trainer_open = None if number is None else (name, number)
    _last_step = _last_step if number is None else number


class Phase:
    """What phase() returns, for a script that writes `with gpu_budget.phase("eval"):` as a function case's
    `with ctx.meter.phase(...)`: the block's end begins "after <name>", kept where it adds, whatever phase the block
    left open (a nested block's "after", a step), as the meter's block does, so a runner written either way gets the
    same phases (an exception leaves the phase open, as a mark without the block would). Unused, it does nothing."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: object, trace: object) -> bool:
        if kind is None:
            _begin(f"after {self.name}", None, gap=True)
        return False


def phase(name: str, step: int | None = None) -> Phase:
    """Begin phase `name` (ending the one before); `step`: the optimizer step it is, for the per-step series. Also a
    `with` block (`Phase`)."""
    phase_name(name)
    global _trainer_open
    number = step_number(step)
    opened, _trainer_open = _trainer_open, None
    if number is not None and opened == (name, number):
        return Phase(name)  # the step a Trainer's callback began just now, marked again by the user's own code
    _begin(name, number)
    return Phase(name)


def _begin(name: str, number: int | None, gap: bool = False) -> None:
    """Begin phase `name` in the meter (a function case's, or the measuring child's through the socket); `gap`: the
    run after a block, which the meter keeps only where it adds (Meter.start's gap)."""
    global _last_step, _trainer_open, _open
    if _local is not None:
        if _local[0] == os.getpid():
            _local[1](name, number, gap=gap)  # the meter's start
    elif active():
        send(with_cuda({"phase": gated_phase_name(name), "step": number, "rank": rank(), **({"gap": True} if gap else {})}))
    _trainer_open = None
    _last_step = _last_step if number is None else number
    _open = name


def last_step() -> int:
    """The step number this process marked last (0 before any): a Trainer the gate's callback meters goes on
    from it."""
    return _last_step


def open_phase() -> str | None:
    """The name of the phase this process began last (None before any): a Trainer's callback that would begin one of
    that name again joins it instead."""
    return _open


def _meter_step() -> int:
    """The step a function case's meter began last (0: none, or not a function case's marking process)."""
    if _local is None or _local[0] != os.getpid():
        return 0
    return getattr(getattr(_local[1], "__self__", None), "last_step", None) or 0


def step(number: int | None = None) -> int:
    """Begin the next training step's phase (`train_step_<k>`, step k); returns k. Call it as each step begins.
    Where a Trainer's callback (the gate's, or meter_callback) has begun a step, and no phase of the user's own came
    since, that step is this one, however often it is marked (once a micro-batch, under gradient accumulation)."""
    global _step, _trainer_open
    if number is None and _trainer_open is not None:
        began = _trainer_open
        _step = began[1]
        phase(*began)  # starts nothing: it is open
        _trainer_open = began  # a later step() in it is this step too, until the Trainer or the user begins another
        return _step
    # after a Trainer's steps too, and a function case's steps its runner marked on ctx.meter itself
    _step = max(_step, _last_step, _meter_step()) + 1 if number is None else step_number(number)
    phase(f"train_step_{_step}", step=_step)
    return _step
