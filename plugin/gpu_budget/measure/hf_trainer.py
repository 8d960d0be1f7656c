"""A Hugging Face Trainer's optimizer steps and evaluations as meter phases, for a runner's own Trainer.

The Trainer runs its loop itself, so a runner cannot bracket the steps with
`ctx.meter.start(...)`; a TrainerCallback can. Importing this module imports
nothing of transformers: `transformers.trainer_callback` imports peft and
bitsandbytes, which ask torch.cuda, so the class is made on the first call,
in the measured child.

What the callbacks on one meter share is kept per meter (`_Track`): a second
callback on it (passed twice) starts no phase the first has started, and a
later Trainer's steps go on from the steps marked on the meter before it (an
earlier Trainer's, or the runner's own), so step numbers never repeat in the
per-step series.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from gpu_budget import script

if TYPE_CHECKING:
    from gpu_budget.measure.meter import Meter

FINAL_LOG = {"train_loss", "total_flos"}  # keys of the metrics the Trainer logs once its loop is over, and only then


def meter_callback(meter: Meter, *, train_end: str | None = "train_end", after_each: Callable[[], None] | None = None,
                   train_begin: str | None = None):
    """A TrainerCallback that makes each optimizer step and each evaluation a phase of `meter` (a ctx.meter).

    Phases: `train_step_<k>` with step=k per optimizer step (not per
    micro-batch, so the per-step series and its growth are over optimizer
    steps), `eval_step_<k>` for an evaluation after step k (eval_strategy
    "steps", the final one, or one a callback of yours asks for in on_step_end;
    `eval_step_0` for eval_on_start's), `eval_epoch_<n>` for one after the
    Trainer's n-th epoch ("epoch"; a training resumed from a checkpoint goes on
    counting, as a later Trainer on the meter does), and `train_end` when the training loop ends (at the Trainer's
    final log of train_loss, before load_best_model_at_end loads its
    checkpoint), so whatever the Trainer does after its loop, or the runner
    after train(), is not the last step's (None: the last phase stays open). A
    Trainer goes on counting from the steps marked on the meter before it (an
    earlier Trainer's, or steps the runner marked itself).
    Start a phase of your own ("train_setup") before building the Trainer, and
    one before an explicit trainer.evaluate(): no callback sees where it begins.
    The Trainer fetches a step's micro-batches before the step begins, so step
    k's phase also holds the loading of step k+1's batches, and where an
    evaluation follows step k, that evaluation's phase holds them instead,
    with the checkpoint saved after it (step 1's are in the phase before it).

    `after_each` runs as each step and each evaluation ends, inside its phase
    (a gc.collect() between phases, a per-step counter), once a phase however
    often the callback is passed. `train_begin`: a phase started when training
    begins (the gate's own callback in a command starts "train_setup" there,
    since nobody else does), unless a phase of that name is open then (the
    runner's own "train_setup", begun just before train()): that one goes on.
    """
    _check_arguments(meter, train_end, after_each, train_begin)
    return _callback_class()(meter, train_end, after_each, train_begin)


def _check_arguments(meter: object, train_end: object, after_each: object, train_begin: object) -> None:
    """Refuse, naming it, what would otherwise fail only once the Trainer trains, deep in its loop: a meter that is no
    meter (ctx itself; ctx.meter in prepare, where it is None) or an after_each that is no function (gc.collect())."""
    if not callable(getattr(meter, "start", None)):
        hint = ("pass ctx.meter, not ctx" if hasattr(meter, "meter") else
                "ctx.meter is None in prepare(ctx), where nothing is measured" if meter is None else "pass ctx.meter")
        raise TypeError(f"meter_callback(meter): expected the run's meter, ctx.meter, got {_described(meter)}: {hint}")
    if after_each is not None and not callable(after_each):
        raise TypeError(f"meter_callback(after_each=...): expected a function to call as each step and evaluation ends "
                        f"(gc.collect, not gc.collect()), got {_described(after_each)}")
    for key, name in (("train_end", train_end), ("train_begin", train_begin)):
        if name is not None and (not isinstance(name, str) or not name or not name.isprintable() or name != name.strip()):
            raise TypeError(f"meter_callback({key}=...): expected a phase name or None, got {_described(name)}")


def _described(value: object) -> str:
    if value is None:
        return "None"
    if isinstance(value, (str, int, float)):
        return f"{value!r:.60} ({type(value).__name__})"
    return f"a {type(value).__name__}"


def gate_callback_class():
    """The callback class the gate adds to a command's Trainers (autohook.py): its phases go to the measuring
    process (script.phase), with "train_setup" where training begins."""
    return _gate_class()


class _ScriptMeter:
    """The measuring process of a gated command, as a meter: one per process, so its Trainers share one _Track."""

    def start(self, name: str, step: int | None = None) -> None:
        script.phase(name, step)

    @property
    def last_step(self) -> int:
        return script.last_step()  # the script's own step() and phase(..., step=k) marks too

    @property
    def open_phase(self) -> tuple[str | None, None]:
        return script.open_phase(), None  # the script's own phase() marks too


_SCRIPT_METER = _ScriptMeter()


@functools.cache
def _gate_class():
    class GateMeterPhases(_callback_class()):
        def __init__(self) -> None:
            super().__init__(_SCRIPT_METER, "train_end", None, "train_setup")

    return GateMeterPhases


class _Track:
    """What every callback on one meter shares: the training metered now, where its step numbers start, the phase
    started last and the after_each functions run in it."""

    def __init__(self, meter: object) -> None:
        self.meter = meter  # held, so the id that keys this track is not another meter's
        self.state: object | None = None  # the TrainerState of the training metered now
        self.offset = 0  # added to the Trainer's global_step: a later Trainer goes on from the steps before it
        self.last = 0  # the last step number started
        self.epoch_offset = 0  # added to the Trainer's epoch: a later Trainer's evaluations go on from the earlier's
        self.last_epoch = 0  # the last epoch counted
        self.opened: tuple[object, str] | None = None  # the training and the phase its callbacks started last
        self.ran: list[Callable[[], None]] = []

    def begin(self, state) -> None:
        """A training begins (its first callback says so; the others on this meter find it begun)."""
        if self.state is not state:  # after the steps marked on the meter so far, the runner's own included
            last = max(self.last, getattr(self.meter, "last_step", 0))
            self.state, self.offset = state, max(0, last - state.global_step)  # a resumed one counts on itself
            self.epoch_offset = max(0, self.last_epoch - math.floor(state.epoch or 0))

    def epoch(self, state) -> int:
        """The epoch ending now (state.epoch: the epochs done, resumed ones included; a part: this one)."""
        return self.epoch_offset + max(1, math.ceil(state.epoch or 0))

    def step(self, state, ahead: int = 0) -> int:
        return self.offset + state.global_step + ahead

    def start(self, state, name: str, step: int | None = None) -> None:
        """Start phase `name`, unless this training's callbacks on this meter started it last (a second callback)."""
        if self.opened == (state, name):
            return
        self.meter.start(name, step=step)
        if self.meter is _SCRIPT_METER or script.marks_to(self.meter):
            script.trainer_began(name, step)  # the user's own gpu_budget.step() in this step is this step
        self.opened, self.ran = (state, name), []
        self.last = step if step is not None else self.last

    def ended(self, after_each: Callable[[], None] | None) -> None:
        if after_each is not None and not any(f is after_each for f in self.ran):
            self.ran.append(after_each)
            after_each()


_TRACKS: dict[int, _Track] = {}


def _track(meter: object) -> _Track:
    return _TRACKS.setdefault(id(meter), _Track(meter))


def _calling_handler(callback: object):
    """The CallbackHandler calling `callback` now (found in its call_event's frame), or None where transformers
    calls it some other way: the callbacks are called in the order listed, and only a callback placed after the
    others (_Tail) sees what they asked of the Trainer's control."""
    frame = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            return None
        for owner in frame.f_locals.values():
            if isinstance(getattr(owner, "callbacks", None), list) and any(c is callback for c in owner.callbacks):
                return owner
        frame = frame.f_back
    return None


class _Phases:
    """Starts a meter phase where the Trainer's flow has decided what comes next (a TrainerCallback's events)."""

    def __init__(self, meter: Meter, train_end: str | None, after_each: Callable[[], None] | None,
                 train_begin: str | None = None) -> None:
        self.meter, self.train_end, self.after_each, self.train_begin = meter, train_end, after_each, train_begin
        self.track = _track(meter)
        self.tailed = False  # a _Tail reads the control for evaluations, after every other callback

    def on_train_begin(self, args, state, control, **kwargs):
        self.track.begin(state)
        handler = _calling_handler(self)
        if handler is not None and not any(getattr(c, "head", None) is self for c in handler.callbacks):
            handler.callbacks = [*handler.callbacks, _tail_class()(self)]  # a new list: the one being run is left as is
        self.tailed = self.tailed or handler is not None
        if self.train_begin is not None and _open_name(self.meter) != self.train_begin:  # not the user's own again
            self.track.start(state, self.train_begin)
        if getattr(args, "eval_on_start", False):  # the Trainer evaluates next, before any step
            self.track.start(state, f"eval_step_{self.track.step(state)}")

    def on_step_begin(self, args, state, control, **kwargs):
        k = self.track.step(state, 1)
        self.track.start(state, f"train_step_{k}", step=k)

    def on_step_end(self, args, state, control, **kwargs):
        self.track.ended(self.after_each)
        if not self.tailed:
            self.evaluation_after_step(state, control)

    def evaluation_after_step(self, state, control) -> None:
        if control.should_evaluate:  # by DefaultFlowCallback, or by any callback where this runs after them all
            self.track.start(state, f"eval_step_{self.track.step(state)}")

    def on_epoch_end(self, args, state, control, **kwargs):
        self.track.last_epoch = max(self.track.last_epoch, self.track.epoch(state))
        if not self.tailed:
            self.evaluation_after_epoch(state, control)

    def evaluation_after_epoch(self, state, control) -> None:
        if control.should_evaluate:
            self.track.start(state, f"eval_epoch_{self.track.epoch(state)}")

    def on_evaluate(self, args, state, control, **kwargs):
        self.track.ended(self.after_each)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if FINAL_LOG <= set(logs or ()):  # the loop has ended: what follows (load_best_model_at_end) is no step's
            self._end(state)

    def on_train_end(self, args, state, control, **kwargs):
        self._end(state)

    def _end(self, state) -> None:
        if self.train_end is not None:
            self.track.start(state, self.train_end)


def _open_name(meter: object) -> str | None:
    """The name of the phase open on `meter` now (None: none, or a meter that does not say)."""
    return (getattr(meter, "open_phase", None) or (None,))[0]


class _Tail:
    """Placed after every other callback of the Trainer (_calling_handler): an evaluation that a callback of the
    user's asks for in on_step_end or on_epoch_end (control.should_evaluate) gets its phase too."""

    def __init__(self, head: _Phases) -> None:
        self.head = head

    def on_step_end(self, args, state, control, **kwargs):
        self.head.evaluation_after_step(state, control)

    def on_epoch_end(self, args, state, control, **kwargs):
        self.head.evaluation_after_epoch(state, control)


@functools.cache
def _callback_class():
    from transformers import TrainerCallback

    return type("MeterPhases", (_Phases, TrainerCallback), {"__doc__": _Phases.__doc__})


@functools.cache
def _tail_class():
    from transformers import TrainerCallback

    return type("MeterPhasesAfterOthers", (_Tail, TrainerCallback), {"__doc__": _Tail.__doc__})
