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

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from gpu_budget.declare.scenario import Scenario, resolve_ref

METRIC_CPU = "ram_tensor_estimate"
METRIC_CUDA = "vram_allocated_estimate"
TRAINER_MAX_GRAD_NORM = 1.0  # TrainingArguments.max_grad_norm's default: a builder of a Trainer run clips at it


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
    """

    model: Any
    optimizer: Any
    batches: list[dict[str, Any]]
    loss: Callable[[Any, dict], Any] | None = None
    max_grad_norm: float | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    undo: list[Callable[[], None]] = field(default_factory=list)  # patches to take back after the steps
    run_micro: int | None = None
    autocast: Any = None
    expandable_segments: bool = False  # the run sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
    sequence: list[Callable[[], dict[str, Any]]] | None = None  # the run's steps in order, each making its one batch
    empty_cache: bool = False  # the run calls torch.cuda.empty_cache() after each step


@dataclass
class Estimate:
    """Bytes of live tensors predicted for a training step. Always an estimate, never a measurement."""

    scenario: str
    scale: str
    device: str
    metric: str
    step_peak: int
    first_step_peak: int
    steady_peak: int | None
    at_peak: dict[str, int]
    peak_phase: str | None
    built: int
    phases: list[dict[str, Any]]
    seconds: float
    steps: int
    cuda_context: int | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    assumed: dict[str, int] = field(default_factory=dict)
    allocated_peak: int | None = None  # CUDA mode: the steps' allocated and reserved peaks through the caching
    reserved_peak: int | None = None  # allocator's rules (allocator.py); None on a CPU
    per_step: list[dict[str, Any]] = field(default_factory=list)  # {step, tensors[, allocated, reserved]} per optimizer step

    @property
    def device_peak(self) -> int | None:
        """The step peak plus the CUDA context (when given): an estimate of the device-level figure."""
        return None if self.cuda_context is None else self.step_peak + self.cuda_context

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "device_peak": self.device_peak, "kind": "estimate"}


def adamw(params, device, fused: bool = False, **kwargs):
    """torch.optim.AdamW as the device would run it: foreach on CUDA, a per-parameter loop on CPU."""
    import torch

    if fused:
        return torch.optim.AdamW(params, fused=True, **kwargs)
    return torch.optim.AdamW(params, foreach=True if device.cuda else None, **kwargs)


def run_step(build: Callable, params: dict[str, Any], fixes: tuple[str, ...], device, steps: int = 2,
             fake: bool = True, as_run: bool = False) -> tuple:
    """Build inside the fake world and run `steps` optimizer steps under the tracker; returns (tracker, plan, known).

    fake=False runs the same thing on real CPU tensors (it allocates them):
    the reference the fake run is checked against.
    """
    import contextlib

    from gpu_budget.estimate import cuda
    from gpu_budget.estimate.fake import fake_world
    from gpu_budget.estimate.tracker import LiveTensors

    if not fake and device.cuda:
        raise ValueError("CUDA mode is a model of a GPU run: it needs fake tensors")
    tracker = LiveTensors(granule=device.granule, workspace=device.workspace)
    world = fake_world() if fake else contextlib.nullcontext()
    with world as known, cuda.modelled(device), tracker:
        tracker.phase("build")
        plan: StepPlan = build(params, fixes, device, known)
        try:
            _steps(plan, tracker, device, steps, as_run)
        finally:
            for undo in plan.undo:
                undo()
    return tracker, plan, known


def _steps(plan: StepPlan, tracker, device, steps: int, as_run: bool = False) -> None:
    """Forward + backward per micro-batch, clipping, the optimizer step: each a tracker phase (in CUDA mode under
    the run's autocast, when it has one)."""
    import contextlib

    import torch

    from gpu_budget.estimate.autocast import CudaAutocast
    from gpu_budget.estimate.autocast import backward as autocast_backward

    model = plan.model
    tracker.label(list(model.parameters()) + list(model.buffers()), "parameters")
    if as_run:
        if plan.sequence is None:
            raise ValueError("as_run needs a builder that gives the run's steps (StepPlan.sequence)")
        schedule = [[make] for make in plan.sequence]
        plan.batches.clear()  # the heaviest batch the builder also made is not held through the run
    else:
        for batch in plan.batches:
            for value in batch.values():
                tracker.track(value)
        schedule = [plan.batches[: plan.run_micro or len(plan.batches)]] * steps
    trainable = [q for q in model.parameters() if q.requires_grad]
    loss_fn = plan.loss or (lambda m, b: m(**b).loss)
    autocast = plan.autocast if device.cuda else None  # forward and loss as under torch.autocast("cuda")
    casting = (lambda: CudaAutocast(autocast)) if autocast is not None else contextlib.nullcontext
    micro = 1 if as_run else len(plan.batches)
    model.train()
    for step, batches in enumerate(schedule, start=1):
        for i, batch in enumerate(batches, start=1):
            suffix = f".{i}" if micro > 1 else ""
            tracker.phase(f"step{step}.forward{suffix}")
            if callable(batch):  # as the run goes: this step's batch, made now
                batch = batch()
            with casting():
                loss = loss_fn(model, batch)
            if micro > 1:
                loss = loss / micro
            tracker.phase(f"step{step}.backward{suffix}")
            if autocast is None:
                loss.backward()
            else:
                autocast_backward(loss, autocast)
            del loss
            tracker.label([q.grad for q in trainable], "gradients")
        tracker.phase(f"step{step}.optimizer")
        if plan.max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(trainable, plan.max_grad_norm, foreach=True if device.cuda else None)
        plan.optimizer.step()
        tracker.label([t for state in plan.optimizer.state.values() for t in state.values()
                       if isinstance(t, torch.Tensor)], "optimizer_state")
        plan.optimizer.zero_grad(set_to_none=True)
        del batch
        if plan.empty_cache and device.cuda:
            tracker.empty_cache()
    tracker.phase("end")


def estimate(build: Callable | str, params: dict[str, Any], fixes: tuple[str, ...] = (), device=None, steps: int = 2,
             name: str = "", scale: str = "", fake: bool = True, as_run: bool = False) -> Estimate:
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
    phases = [{k: row[k] for k in ("name", "peak", "at_peak")} for row in replay.phases]
    step_rows = [row for row in phases if row["name"].startswith("step")]
    peak_row = max(step_rows, key=lambda row: row["peak"])
    first = [row["peak"] for row in step_rows if row["name"].startswith("step1.")]
    steady = [row["peak"] for row in step_rows if not row["name"].startswith("step1.")]
    build_row = next(row for row in replay.phases if row["name"] == "build")
    through = None
    if device.cuda:  # the same log through the caching allocator: what max_memory_allocated / _reserved would say
        from gpu_budget.estimate import allocator

        through = [r for r in allocator.replay(tracker.log, tracker.marks, plan.expandable_segments)
                   if r["name"].startswith("step")]
    per_step: dict[int, dict] = {}  # step number -> its peaks: tensors, and through the allocator
    for row in step_rows:
        entry = per_step.setdefault(_step_of(row), {"step": _step_of(row), "tensors": 0})
        entry["tensors"] = max(entry["tensors"], row["peak"])
    for row in through or ():
        entry = per_step[_step_of(row)]
        entry["allocated"] = max(entry.get("allocated", 0), row["allocated"])
        entry["reserved"] = max(entry.get("reserved", 0), row["reserved"])
    return Estimate(
        scenario=name, scale=scale, device=device.name, metric=METRIC_CUDA if device.cuda else METRIC_CPU,
        step_peak=peak_row["peak"], first_step_peak=max(first), steady_peak=max(steady) if steady else None,
        at_peak=peak_row["at_peak"], peak_phase=peak_row["name"], built=build_row["end"], phases=phases,
        seconds=round(seconds, 3), steps=steps, cuda_context=device.cuda_context, facts=plan.facts,
        notes=list(plan.notes), assumed=dict(known.assumed) if known is not None else {},
        allocated_peak=max(r["allocated"] for r in through) if through else None,
        reserved_peak=max(r["reserved"] for r in through) if through else None,
        per_step=list(per_step.values()),
    )


def _step_of(row: dict[str, Any]) -> int:
    """The optimizer step a phase belongs to: 'step3.backward.2' -> 3."""
    return int(row["name"].removeprefix("step").split(".")[0])


def estimate_scenario(scenario: Scenario, scale: str = "tiny", device=None, steps: int = 2,
                      fake: bool = True, as_run: bool = False) -> Estimate:
    """The estimate of `scenario` at `scale`, with its params and fixes, as its runner would run it."""
    from gpu_budget.estimate.builders import builder_for

    return estimate(builder_for(scenario), scenario.params_for(scale), scenario.fixes, device=device, steps=steps,
                    name=scenario.name, scale=scale, fake=fake, as_run=as_run)
