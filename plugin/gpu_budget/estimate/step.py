"""A GPU-free estimate of one training step's tensor peak: the step run on fake tensors, its storages counted.

A scenario's estimator builder (builders.py finds it; the case studies keep
theirs beside their runners, memtests/<scenario>/estimate.py) builds the same
architecture from the same config as its runner, inside a fake world
(fake.py), so a 7B model costs no memory. The step (forward, backward,
optimizer step, for each micro-batch of gradient accumulation) then runs under
a live-storage tracker (tracker.py), which gives the peak per phase and its
split into parameters, gradients, optimizer state and activations. In CUDA
mode the known CPU/GPU differences are modelled (cuda.py, autocast.py), the log
is replayed through the caching allocator's rules (allocator.py), and the
figures are *estimates* of the allocated and reserved GPU peaks: their own
metric, never measured ones.

What it predicts is tensor bytes. A process's RSS adds the interpreter and
libraries (the floor), allocator slack and non-tensor data; docs/estimator.md
gives the error against real runs per scenario.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpu_budget.declare.params import Json, Params
from gpu_budget.declare.scenario import Scenario, resolve_ref
from gpu_budget.estimate.figures import Estimate, PhaseFigure, StepPeaks, step_of

if TYPE_CHECKING:
    import torch

    from gpu_budget.estimate.allocator import AllocatorPhase
    from gpu_budget.estimate.cuda import Device
    from gpu_budget.estimate.fake import KnownValues
    from gpu_budget.estimate.tracker import LiveTensors

METRIC_CPU = "ram_tensor_estimate"
METRIC_CUDA = "vram_allocated_estimate"
TRAINER_MAX_GRAD_NORM = 1.0  # TrainingArguments.max_grad_norm's default: a builder of a Trainer run clips at it

Batch = dict[str, "torch.Tensor | Json"]  # a micro-batch: the loss's keyword arguments (tensors, plain values)
Builder = Callable[[Params, tuple[str, ...], "Device", "KnownValues | None"], "StepPlan"]  # (params, fixes, device, known)


@dataclass
class StepPlan:
    """What a builder returns: the model, its optimizer, the micro-batches of one optimizer step.

    loss(model, batch) -> scalar tensor; default `model(**batch).loss`.
    max_grad_norm: clip before the step, as the HF Trainer does (None: no clipping).
    run_micro: run only the first N micro-batches of each step (the rest stay
    held, as the Trainer holds a step's batches): micro-batches of one shape
    after the second add no peak, gradients accumulate in place (checked in
    tests/unit/test_estimate.py), so 2 gives the same peak at a fraction of the time.
    expandable_segments: the run's allocator splits blocks at 512 bytes (allocator.py).
    sequence: for estimate(as_run=True), the run's steps in order, each a function that makes that step's
    batch (made at its step, dropped after it, as a runner moves each batch to the GPU): the allocator replay
    then follows the run step by step. empty_cache: the run empties the allocator's cache after each step.
    autocast: the dtype the run's forward autocasts to on CUDA (torch.float16 for a Trainer's fp16 or
    torch.autocast); CUDA mode models its casts (autocast.py). None: no mixed precision.
    run_steps: the optimizer steps the run takes where it stops early (a Trainer's max_steps): fewer than the
    estimate's `steps` are estimated as the run takes them (one step never holds the optimizer's state in a
    forward). None: the run takes at least `steps`.
    batch_note: which of the run's batches `batches` is (S2: its heaviest), a note where the estimate steps it;
    as the run goes (as_run) every batch of `sequence` takes its own step, and the estimate's note says so instead.
    """

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    batches: list[Batch]
    loss: Callable[[torch.nn.Module, Batch], torch.Tensor] | None = None
    max_grad_norm: float | None = None
    facts: dict[str, Json] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    undo: list[Callable[[], None]] = field(default_factory=list)  # patches to take back after the steps
    run_micro: int | None = None
    autocast: torch.dtype | None = None
    expandable_segments: bool = False  # the run sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
    sequence: list[Callable[[], Batch]] | None = None  # the run's steps in order, each making its one batch
    empty_cache: bool = False  # the run calls torch.cuda.empty_cache() after each step
    run_steps: int | None = None  # the run's own optimizer steps, where it stops early (max_steps)
    batch_note: str | None = None  # which batch `batches` is; not said as_run, where each batch takes its step


def adamw(params: Iterable[torch.nn.Parameter], device: Device, fused: bool = False,
          **kwargs: float | tuple[float, float] | bool) -> torch.optim.AdamW:
    """torch.optim.AdamW as the device would run it: foreach on CUDA, a per-parameter loop on CPU."""
    import torch

    if fused:
        return torch.optim.AdamW(params, fused=True, **kwargs)
    return torch.optim.AdamW(params, foreach=True if device.cuda else None, **kwargs)


def run_step(build: Builder, params: Params, fixes: tuple[str, ...], device: Device, steps: int = 2,
             fake: bool = True, as_run: bool = False) -> tuple[LiveTensors, StepPlan, KnownValues | None]:
    """Build inside the fake world and run `steps` optimizer steps under the tracker; returns (tracker, plan, known).

    fake=False runs the same thing on real CPU tensors (it allocates them):
    the reference the fake run is checked against.
    """
    from gpu_budget.estimate import cuda
    from gpu_budget.estimate.checkpoint import check_fake, loading_here, wrapping_refused
    from gpu_budget.estimate.fake import fake_world, values_not_traced
    from gpu_budget.estimate.tracker import LiveTensors

    if not fake and device.cuda:
        raise ValueError("CUDA mode is a model of a GPU run: it needs fake tensors")
    tracker = LiveTensors(granule=device.granule, workspace=device.workspace)
    world = fake_world() if fake else contextlib.nullcontext()
    with world as known, cuda.modelled(device), tracker:
        tracker.phase("build")
        with loading_here(), wrapping_refused():
            plan: StepPlan = build(params, fixes, device, known)
        if fake:
            check_fake(plan.model)
        try:
            with values_not_traced() if fake else contextlib.nullcontext():  # transformers imported by now
                _steps(plan, tracker, device, steps, as_run)
        finally:
            for undo in plan.undo:
                undo()
    return tracker, plan, known


@dataclass(frozen=True)
class _Run:
    """What each phase of the steps reads: the plan, the tracker, the device modelled, the trainable parameters."""

    plan: StepPlan
    tracker: LiveTensors
    device: Device
    trainable: list[torch.nn.Parameter]
    micro: int  # micro-batches per optimizer step: above 1, each loss is divided by it

    @property
    def autocast(self) -> torch.dtype | None:
        """The run's autocast dtype where it is modelled (CUDA mode): forward and loss as under torch.autocast."""
        return self.plan.autocast if self.device.cuda else None

    def casting(self) -> contextlib.AbstractContextManager[object]:
        from gpu_budget.estimate.autocast import CudaAutocast

        return contextlib.nullcontext() if self.autocast is None else CudaAutocast(self.autocast)

    def loss(self, batch: Batch) -> torch.Tensor:
        model = self.plan.model
        return self.plan.loss(model, batch) if self.plan.loss is not None else model(**batch).loss


def _steps(plan: StepPlan, tracker: LiveTensors, device: Device, steps: int, as_run: bool = False) -> None:
    """Forward + backward per micro-batch, clipping, the optimizer step: each a tracker phase (in CUDA mode under
    the run's autocast, when it has one)."""
    model = plan.model
    tracker.label(list(model.parameters()) + list(model.buffers()), "parameters")
    schedule = _schedule(plan, tracker, steps, as_run)
    run = _Run(plan, tracker, device, [q for q in model.parameters() if q.requires_grad],
               micro=1 if as_run else len(plan.batches))
    model.train()
    for step, batches in enumerate(schedule, start=1):
        for i, batch in enumerate(batches, start=1):
            batch = _forward_backward(run, step, i, batch)
        _optimizer_step(run, step)
        del batch  # the step's batch is held through its optimizer step, as the run holds it
        if plan.empty_cache and device.cuda:
            tracker.empty_cache()
    tracker.phase("end")


def _schedule(plan: StepPlan, tracker: LiveTensors, steps: int, as_run: bool) -> list[list[Batch | Callable[[], Batch]]]:
    """Each optimizer step's micro-batches: the run's own, each made at its step (as_run), or `steps` steps of the
    builder's batches, held (and counted) from the start."""
    if as_run:
        if plan.sequence is None:
            raise ValueError("as_run needs a builder that gives the run's steps (StepPlan.sequence)")
        schedule: list[list[Batch | Callable[[], Batch]]] = [[make] for make in plan.sequence]
        plan.batches.clear()  # the heaviest batch the builder also made is not held through the run
        return schedule
    for batch in plan.batches:
        for value in batch.values():
            tracker.track(value)
    if plan.run_steps is not None and plan.run_steps > 0:
        steps = min(steps, plan.run_steps)
    return [plan.batches[: plan.run_micro or len(plan.batches)]] * steps


def _forward_backward(run: _Run, step: int, i: int, batch: Batch | Callable[[], Batch]) -> Batch:
    """One micro-batch's forward and backward, each a phase; returns the batch, which the caller holds on."""
    from gpu_budget.estimate.autocast import backward as autocast_backward

    suffix = f".{i}" if run.micro > 1 else ""
    run.tracker.phase(f"step{step}.forward{suffix}")
    if callable(batch):  # as the run goes: this step's batch, made now
        batch = batch()
    with run.casting():
        loss = run.loss(batch)
    if run.micro > 1:
        loss = loss / run.micro
    run.tracker.phase(f"step{step}.backward{suffix}")
    if run.autocast is None:
        loss.backward()
    else:
        autocast_backward(loss, run.autocast)
    del loss
    run.tracker.label([q.grad for q in run.trainable], "gradients")
    return batch


def _optimizer_step(run: _Run, step: int) -> None:
    """Clipping (where the run clips), the optimizer's step and zero_grad: one phase."""
    import torch

    plan = run.plan
    run.tracker.phase(f"step{step}.optimizer")
    if plan.max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(run.trainable, plan.max_grad_norm, foreach=True if run.device.cuda else None)
    plan.optimizer.step()
    run.tracker.label([t for state in plan.optimizer.state.values() for t in state.values()
                       if isinstance(t, torch.Tensor)], "optimizer_state")
    plan.optimizer.zero_grad(set_to_none=True)


def estimate(build: Builder | str, params: Params, fixes: tuple[str, ...] = (), device: Device | None = None,
             steps: int = 2, name: str = "", scale: str = "", fake: bool = True, as_run: bool = False) -> Estimate:
    """Run `build`'s step on fake tensors and say what its tensors peak at, per phase and category.

    fake=False: the same on real tensors (a measurement of live tensor bytes, for checking the estimator).
    as_run: the run's own steps in order (StepPlan.sequence) instead of `steps` steps of its heaviest batch.
    """
    from gpu_budget.estimate.cuda import Device

    device = device or Device()
    build = resolve_ref(build) if isinstance(build, str) else build
    t0 = time.perf_counter()
    tracker, plan, known = run_step(build, params, tuple(fixes), device, steps, fake=fake, as_run=as_run)
    replay = tracker.replay()
    seconds = time.perf_counter() - t0
    phases = [PhaseFigure(p.name, p.peak, p.at_peak) for p in replay.phases]
    step_rows = [p for p in phases if p.name.startswith("step")]
    peak_row = max(step_rows, key=lambda p: p.peak)
    first = [p.peak for p in step_rows if p.name.startswith("step1.")]
    steady = [p.peak for p in step_rows if not p.name.startswith("step1.")]
    built = next(p.end for p in replay.phases if p.name == "build")
    through = _through_allocator(tracker, plan) if device.cuda else None
    return Estimate(
        scenario=name, scale=scale, device=device.name, metric=METRIC_CUDA if device.cuda else METRIC_CPU,
        step_peak=peak_row.peak, first_step_peak=max(first), steady_peak=max(steady) if steady else None,
        at_peak=peak_row.at_peak, peak_phase=peak_row.name, built=built, phases=phases,
        seconds=round(seconds, 3), steps=len({step_of(p.name) for p in step_rows}), cuda_context=device.cuda_context, facts=plan.facts,
        notes=_notes(plan, as_run, steps), assumed=dict(known.assumed) if known is not None else {},
        allocated_peak=max(r.allocated for r in through) if through else None,
        reserved_peak=max(r.reserved for r in through) if through else None,
        per_step=_per_step(step_rows, through),
    )


def _notes(plan: StepPlan, as_run: bool, steps: int) -> list[str]:
    """The builder's notes, after the one saying which batches were stepped: the builder's own (batch_note), or,
    as the run goes, the run's steps (each batch its own step); and, where the run stops before the steps asked,
    how many were estimated (a figure of fewer steps than asked must say so)."""
    if as_run and plan.sequence is not None:
        stepped = (f"the run's own {len(plan.sequence)} steps in order, each batch made at its step and dropped after "
                   "it (as_run)")
    else:
        stepped = plan.batch_note
    run = plan.run_steps
    capped = (f"the run stops after {run} optimizer step{'s' * (run != 1)} (StepPlan.run_steps): {run} estimated, "
              f"not {steps}") if not as_run and run is not None and 0 < run < steps else None
    return [note for note in (stepped, capped) if note] + list(plan.notes)


def _through_allocator(tracker: LiveTensors, plan: StepPlan) -> list[AllocatorPhase]:
    """The steps' phases with the log through the caching allocator: what max_memory_allocated / _reserved would say."""
    from gpu_budget.estimate import allocator

    return [r for r in allocator.replay(tracker.log, tracker.marks, plan.expandable_segments) if r.name.startswith("step")]


def _per_step(step_rows: list[PhaseFigure], through: list[AllocatorPhase] | None) -> list[StepPeaks]:
    """Each optimizer step's peaks, in order: its tensors', and through the allocator where replayed."""
    tensors: dict[int, int] = {}
    allocated: dict[int, int] = {}
    reserved: dict[int, int] = {}
    for row in step_rows:
        tensors[step_of(row.name)] = max(tensors.get(step_of(row.name), 0), row.peak)
    for phase in through or ():
        n = step_of(phase.name)
        allocated[n], reserved[n] = max(allocated.get(n, 0), phase.allocated), max(reserved.get(n, 0), phase.reserved)
    return [StepPeaks(n, peak, allocated.get(n), reserved.get(n)) for n, peak in tensors.items()]


def estimate_scenario(scenario: Scenario, scale: str = "tiny", device: Device | None = None, steps: int = 2,
                      fake: bool = True, as_run: bool = False) -> Estimate:
    """The estimate of `scenario` at `scale`, with its params and fixes, as its runner would run it."""
    from gpu_budget.estimate.builders import BuilderParams, builder_for

    return estimate(builder_for(scenario), BuilderParams(scenario, scale), scenario.fixes, device=device, steps=steps,
                    name=scenario.name, scale=scale, fake=fake, as_run=as_run)
