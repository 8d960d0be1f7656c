"""Peak memory per phase of a measured run, read exactly where the OS allows.

Host RAM: writing "5" to /proc/self/clear_refs resets the kernel's high-water
mark (VmHWM), so the VmHWM read at a phase's end is that phase's exact peak
RSS, however short the spike. Off Linux a psutil sampling thread stands in
and can miss short spikes (benchmarks/ measures by how much).

GPU: torch's allocator peaks (allocated, reserved) reset per phase, plus
NVML's figure for this process (gpu_budget.measure.nvml: sampled for a peak over the
phase, matched without needing the host's pid namespace), which also holds the
CUDA context. Without CUDA the GPU fields are None, never 0: torch returns 0
silently there.

Process tree: a run's RAM includes its descendants (DataLoader workers,
subprocesses), which the main process's VmHWM does not see. Each phase also
gets `ram_tree_peak`: the main process's exact peak plus the peak over time of
its descendants' summed private figures (tree.py says how it is read and where
it can err). The tree figure is the gated host-RAM metric; the main process's
stays beside it.

A command case (command.py) is measured from outside: the measuring process
only starts the user's command, so `follow(pid)` makes that process the main
one (its peak is the tree's reading of it, counted in full) and the tree figure
is the command's tree alone, without the measuring process. Its GPU figures
come from the command's own process, which reports its allocator's peaks and
NVML's figure of itself at each phase mark and at its exit (`report_gpu`);
the tree's summed NVML figure (`vram_tree`, gpu_tree.py) is read from here,
without touching CUDA. Where the tree never read the command's process (it
exited before the first sample), the kernel's figure of it as it was reaped
stands in (`kernel`, kernel_floor.py).

Phases are contiguous: starting one ends the one before, so no allocation
between two phases escapes measurement. A `with meter.phase()` block ends its
phase where the block ends; what the run does after it, until the next phase
begins or the run ends, is measured as a phase "after <name>", recorded where
it reached past the phase before it (by more than gaps.GAP_NOISE), so a spike between
two blocks is in the row's peak. What a runner does before its first phase
(lead_in) is the phase "run", as a command's is, recorded where it reached past
the phase after it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gpu_budget.measure import card_cap, gaps, procfs
from gpu_budget.measure.card_cap import Capped
from gpu_budget.measure.device import cuda_available, device_info  # noqa: F401  device_info: the child's probe reads it here
from gpu_budget.measure.facts import RunnerFacts
from gpu_budget.measure.kernel_floor import KernelPeak
from gpu_budget.measure.summary import Summary, summarize
from gpu_budget.measure.tree import TREE_METHOD, OnPoll, ProcessTree
from gpu_budget.measure.tree import available as tree_available
from gpu_budget.model.card import Card
from gpu_budget.model.figures import FIRST_PHASE, Peaks, PhaseRecord, RankGpu, TreeReading
from gpu_budget.model.json_value import JsonMapping
from gpu_budget.model.metric import REPORTED
from gpu_budget.script import gated_phase_name, step_number

if TYPE_CHECKING:
    from gpu_budget.measure.gpu_tree import GpuTree
    from gpu_budget.measure.tensors import TensorPeak  # imports torch: for a run that imported it

_CLEAR_REFS = "/proc/self/clear_refs"


def can_reset_hwm() -> bool:
    try:
        with open(_CLEAR_REFS, "w") as fh:
            fh.write("5")
        return procfs.status("self") is not None
    except OSError:
        return False


class _RssSampler:
    """Fallback where VmHWM cannot be reset: samples RSS on a thread (misses short spikes)."""

    def __init__(self, interval: float = 0.005) -> None:
        import psutil

        self._proc = psutil.Process()
        self._interval = interval
        self._peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._peak = max(self._peak, self._proc.memory_info().rss)
            time.sleep(self._interval)

    def reset(self) -> None:
        self._peak = self._proc.memory_info().rss

    def peak(self) -> int:
        return max(self._peak, self._proc.memory_info().rss)


class _Cuda:
    """Per-phase CUDA peaks from torch's allocator and NVML's figure for this process (gpu_budget.measure.nvml)."""

    def __init__(self) -> None:
        import torch

        from gpu_budget.measure import nvml

        self.torch = torch
        before = nvml.snapshot_before_context()  # the device's use before this process's CUDA context exists
        self.device = torch.cuda.current_device()
        self.memory, _ = nvml.open_for(torch, self.device, before)
        self.sampler = nvml.PeakSampler(self.memory.read) if self.memory is not None else None

    def reset(self) -> None:
        self.torch.cuda.synchronize(self.device)
        self.torch.cuda.reset_peak_memory_stats(self.device)
        if self.sampler is not None:
            self.sampler.reset()

    def read(self) -> Peaks:
        """The phase's GPU peaks. After a sticky CUDA error (every CUDA call fails from then on) a figure that
        cannot be read is None, and the phase's host RAM still goes out."""
        try:
            self.torch.cuda.synchronize(self.device)
        except Exception:  # noqa: BLE001, S110  the allocator's counters are host-side: still readable
            pass

        return self.running()

    def running(self) -> Peaks:
        """The open phase's peaks so far, without a synchronize: the allocator's counters are host-side, so another
        thread (a child's stream) reads them too."""
        def figure(read: Callable[[int], int]) -> int | None:
            try:
                return int(read(self.device))
            except Exception:  # noqa: BLE001  a sticky CUDA error fails every call: no figure, the error is reported
                return None

        return Peaks(vram_allocated=figure(self.torch.cuda.max_memory_allocated),
                     vram_reserved=figure(self.torch.cuda.max_memory_reserved),
                     vram_device=self.sampler.peak() if self.sampler is not None else None)

    @property
    def nvml_method(self) -> str | None:
        return self.memory.method if self.memory is not None else None

    def cap_to(self, card: Card) -> Capped:
        """Run this process as on `card` (card_cap.py): before the run's first allocation."""
        return card_cap.cap(self.torch, self.device, card, card_cap.reading(self.memory))

    def close(self) -> None:
        if self.sampler is not None:
            self.sampler.close()


def running_gpu(meter: Meter) -> Peaks:
    """The meter's process's GPU peaks in the open phase so far (none without CUDA): what a child streams, so a run
    stopped mid-phase keeps them (child._TreeStream)."""
    return meter._cuda.running() if meter._cuda is not None else Peaks()


def reaches_past(record: PhaseRecord, before: PhaseRecord | None) -> bool:
    """Whether a gap's record reached past the phase before it in some figure (by more than gaps.GAP_NOISE): one that did
    not moves no peak of the run."""
    return gaps.reaches_past(record.peaks, before.peaks if before is not None else None)


GAP, LEAD = "gap", "lead"  # kinds of phase the meter keeps only where they add (_Kept)


@dataclass
class _Kept:
    """Which ended phases a meter records: every phase, the run after a block (GAP) where it reached past the phase
    before it, the lead-in (LEAD) where it reached past the phase after it, so it is held until that one ends."""

    phases: list[PhaseRecord]
    on_phase: Callable[[PhaseRecord], None] | None
    lead: PhaseRecord | None = None

    def add(self, record: PhaseRecord, kind: str) -> PhaseRecord | None:
        """Record `record` where it is kept (None where not, or not yet)."""
        if kind == LEAD:
            self.lead = record
            return None
        if kind == GAP and not reaches_past(record, self.phases[-1] if self.phases else None):
            return None
        lead, self.lead = self.lead, None
        if lead is not None and reaches_past(lead, record):
            self._record(lead)
        return self._record(record)

    def whole(self, name: str) -> bool:
        """Record the lead-in as the whole run `name` where no phase followed it; whether there was one."""
        lead, self.lead = self.lead, None
        if lead is not None:
            self._record(replace(lead, name=name))
        return lead is not None

    def _record(self, record: PhaseRecord) -> PhaseRecord:
        self.phases.append(record)
        if self.on_phase is not None:
            self.on_phase(record)
        return record


@dataclass
class Meter:
    """Brackets the phases of a run (load, data, train steps, eval) and records each one's peaks.

    `on_phase` is called with every finished PhaseRecord and `on_begin` with each phase's name and step as it begins,
    so a child can stream them out before it is killed (a timeout then says where the run was, and keeps that phase).
    """

    on_phase: Callable[[PhaseRecord], None] | None = None
    on_begin: Callable[[str, int | None], None] = lambda name, step: None
    use_cuda: bool | None = None
    tensors: TensorPeak | None = None  # the tensor count the run executes under (CPU runs), reset per phase
    phases: list[PhaseRecord] = field(default_factory=list)
    info: RunnerFacts = field(default_factory=RunnerFacts)  # the runner's facts and how figures were read (nvml_method)
    tree: ProcessTree | bool | None = None  # None: read the process tree where /proc allows; False: never
    on_tree: OnPoll | None = None  # the open phase's running figures (tree.Running), from the tree's thread
    external: bool = False  # a command case: this process is not measured, the process given to follow() is
    gpu_tree: GpuTree | None = None  # a command case on a GPU host: NVML's figures of the command's processes

    def __post_init__(self) -> None:
        self._hwm = can_reset_hwm()
        if self.external and not (self._hwm and tree_available()):
            raise RuntimeError("a command is measured through /proc (VmHWM resets and smaps_rollup): Linux only")
        self._sampler = None if self._hwm else _RssSampler()
        if self.use_cuda is None:
            self.use_cuda = cuda_available()
        self._cuda = _Cuda() if self.use_cuda else None
        # name, step, start; and its kind: "" a phase, GAP the run after a block ended (phase()), LEAD the lead-in
        self._open: tuple[str, int | None, float, str] | None = None
        self._kept = _Kept(self.phases, self.on_phase)
        self._born = time.perf_counter()
        self.last_step = 0  # the step number started last (a Trainer's callback goes on from it: hf_trainer.py)

        self._main: int | None = None  # follow()'s pid
        self._main_read = False  # the tree read follow()'s process (a figure of its own in some phase)
        # the kernel's figure of it, set as it is reaped: the phase ending next takes it where the tree never read it
        self.kernel: KernelPeak | None = None
        self.floored: KernelPeak | None = None  # ... where it stood in for the tree's
        self._reported: dict[str, int] = {}  # the open phase's GPU figures, as the followed process reported them
        if self.tree is None or self.tree is True:
            self.tree = (ProcessTree(on_poll=self.on_tree, count_root=not self.external).report_exits().start()
                         if self._hwm and tree_available() else None)
        elif self.tree is False:
            self.tree = None

    def run_as(self, card: Card | None) -> Capped | None:
        """Cap this process's allocator as on `card` (card_cap.py), before its run allocates; None without CUDA (a
        CPU run has no allocator to cap) or without a card. The row's info says the cap it ran under."""
        if card is None or self._cuda is None:
            return None
        capped = self._cuda.cap_to(card)
        self.info.gate("card", capped.note)
        return capped

    def follow(self, pid: int, environ: Mapping[str, str] | None = None) -> None:
        """Measure `pid` (a command's process, started with `environ`) as the main process, in full (tree.follow)."""
        self._main = pid
        self.tree.follow(pid, os.environ if environ is None else environ)

    @property
    def unread(self) -> bool:
        """Whether no process of the followed tree was ever read, nor stood in for by the kernel's figure."""
        return not self._main_read and self.floored is None and not any(p.ram_tree_peak for p in self.phases)

    def report_gpu(self, figures: JsonMapping) -> None:
        """GPU figures of the open phase, as the followed process reported them (its allocator's peaks since its
        last report, NVML's figure of it): the phase keeps the largest of each. They come from another process's
        message (script.cuda_peaks): a figure that is not a whole number is left out."""
        for metric in REPORTED:
            value = figures.get(metric)
            if isinstance(value, int) and not isinstance(value, bool):
                self._reported[metric] = max(self._reported.get(metric, 0), value)

    @property
    def ram_method(self) -> str:
        return "vmhwm" if self._hwm else "psutil-sampling"

    @property
    def ram_tree_method(self) -> str | None:
        return TREE_METHOD if self.tree is not None else None

    def close(self) -> None:
        """Stop the tree's and the GPU sampler's threads (a measured child ends anyway; in-process users call this)."""
        if self.tree is not None:
            self.tree.close()
        if self._cuda is not None:
            self._cuda.close()
        if self.gpu_tree is not None:
            self.gpu_tree.close()

    # -- phases -------------------------------------------------------------
    def start(self, name: str, step: int | None = None, gap: bool = False) -> None:
        """Begin phase `name` (ending the open one, so phases tile the run); `gap`: the run after a block (phase(), a
        script's: script.Phase), recorded only where it adds."""
        name, step = gated_phase_name(name), step_number(step)  # refused before the phase ends (numpy's ints pass)
        if self._open is not None:
            self.stop()
        if self.external:
            pass  # the tree resets the followed process at every read
        elif self._hwm:
            with open(_CLEAR_REFS, "w") as fh:
                fh.write("5")
        else:
            self._sampler.reset()
        if self.tree is not None:
            self.tree.phase_start()
        if self._cuda is not None:
            self._cuda.reset()
        if self.tensors is not None:
            self.tensors.reset()
        self._open, self.last_step = (name, step, time.perf_counter(), GAP if gap else ""), self.last_step if step is None else step
        self.on_begin(name, step)

    def stop(self) -> PhaseRecord | None:
        """End the open phase and record it (None where none is open, or it was a gap that added nothing)."""
        if self._open is None:
            return None
        name, step, t0, kind = self._open
        self._open = None
        if self.external:  # the followed process's split of its pages (gone once it exited: None)
            status = procfs.status(self._main) if self._main is not None else None
        else:
            status = procfs.status("self")
        reading = self.tree.phase_end() if self.tree is not None else None
        if self.external:
            peak, tree_peak = self._followed(reading)
        else:
            peak = status.hwm if self._hwm else self._sampler.peak()
            tree_peak = None if reading is None else peak + reading.private
        gpu = Peaks()
        if self._cuda is not None:
            gpu = self._cuda.read()
            self.info.gate("nvml_method", self._cuda.nvml_method)
        gpu, self._reported = replace(gpu, **self._reported), {}
        if self.gpu_tree is not None:
            vram_tree, reading = self._read_gpu_tree(reading)
            gpu = replace(gpu, vram_tree=vram_tree)
        record = PhaseRecord(
            name=name, step=step, seconds=time.perf_counter() - t0, ram_peak=peak,
            rss_anon=status.rss_anon if status is not None else None,
            rss_file=status.rss_file if status is not None else None,
            ram_tensor=self.tensors.peak if self.tensors is not None else None, ram_tree_peak=tree_peak, tree=reading,
            vram_allocated=gpu.vram_allocated, vram_reserved=gpu.vram_reserved, vram_device=gpu.vram_device,
            vram_tree=gpu.vram_tree)
        return self._kept.add(record, kind)

    def _followed(self, reading: TreeReading | None) -> tuple[int | None, int | None]:
        """follow()'s process's peak (None, never 0 B, where the tree never read it) and its tree's in the phase
        ending; where the kernel's figure of an unread process is its own, that figure floors both (kernel_floor.py)."""
        peak = (reading.whole.get(self._main) or None) if reading is not None and self._main is not None else None
        tree = reading.private if reading is not None else None
        self._main_read = self._main_read or bool(peak)
        if self._main_read or self.kernel is None or not self.kernel.own:
            return peak, tree
        self.floored = self.kernel
        return self.kernel.maxrss, max(tree or 0, self.kernel.maxrss)

    def _read_gpu_tree(self, reading: TreeReading | None) -> tuple[int | None, TreeReading | None]:
        """The tree's summed NVML figure of the phase ending, and the tree's reading with each rank's beside its RAM
        figures."""
        gpu = self.gpu_tree.phase_end()
        if gpu.total is None:
            return None, reading
        self.info.gate("vram_tree_method", gpu.method)
        if reading is not None and gpu.ranks:
            reading = replace(reading, ranks={rank: replace(r, vram_tree=gpu.ranks.get(rank))
                                              for rank, r in reading.ranks.items()})
        return gpu.total, reading

    @property
    def open_phase(self) -> tuple[str | None, int | None]:
        """The phase open now and its step ((None, None) between phases)."""
        return (self._open[0], self._open[1]) if self._open is not None else (None, None)

    def lead_in(self, name: str = FIRST_PHASE) -> None:
        """Begin the run before its first phase as phase `name`: a model a runner builds before it marks one is
        measured. Recorded where it reached past the phase after it (by more than gaps.GAP_NOISE), as a gap is."""
        self.start(name)
        self._open = (*self._open[:3], LEAD)

    def whole_run(self, name: str = FIRST_PHASE) -> None:
        """Where the run marked no phase, record it whole as one (its peaks since its lead-in, else since this meter
        began), so a runner without phases is gated like any other instead of passing with no figure."""
        if self.phases or self._open is not None or self._kept.whole(name):
            return
        self._open = (name, None, self._born, "")
        self.stop()

    @contextmanager
    def phase(self, name: str, step: int | None = None) -> Iterator[None]:
        """Phase `name` for the block; what runs after it, until the next phase or the run's end, is "after <name>".
        An exception leaves the phase open, as a script's block does (script.Phase): a runner that catches it is
        measured on in it, and one that does not fails in it."""
        self.start(name, step)
        yield
        self.start(f"after {name}", gap=True)  # ends the open phase: the block's own, or one begun in it

    # -- summary ------------------------------------------------------------
    def summary(self, rank_cuda: Mapping[int, RankGpu] | None = None, unread_steps: Mapping[int, int] | None = None) -> Summary:
        return summarize(self.phases, cuda=bool(self.use_cuda), ram_method=self.ram_method,
                         ram_tree_method=self.ram_tree_method, rank_cuda=rank_cuda, unread_steps=unread_steps)
