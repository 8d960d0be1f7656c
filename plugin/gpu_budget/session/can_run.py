"""Whether a case can be measured on this machine, and which of its budgets this machine can check.

A case that cannot run here is skipped with the reason (or an error where
--gpu-budget-require-gpu says the runner must have the GPU it lacks). A VRAM
budget on a host without CUDA is not checked: the case trains on the CPU, its
host RAM is gated, and the row says so. A VRAM budget a finished GPU run
measured nothing against is an error: the budget would test nothing. A budget
this machine's memory cannot reach (a VRAM budget above its GPU; a reproduction
resting on a RAM budget above its host's memory or cgroup limit) is skipped.
"""

from __future__ import annotations

from gpu_budget.declare.marks import BudgetMark
from gpu_budget.declare.scenario import Scenario
from gpu_budget.isolate.environment import EnvironmentFailed
from gpu_budget.judge import unmeasured
from gpu_budget.measure.device import DeviceInfo
from gpu_budget.model.card import more_than
from gpu_budget.model.result import Measurement
from gpu_budget.units import format_size


def none_here(device: DeviceInfo, noun: str = "none") -> str:
    """Where no CUDA GPU is: "this host has none", or, where CUDA_VISIBLE_DEVICES was set, that the measured children
    see none with it (it may hide the host's GPUs: empty, "-1", an index or UUID the host lacks)."""
    if device.visible is None:
        return f"this host has {noun}"
    return f"the measured children see {noun} (CUDA_VISIBLE_DEVICES={device.visible!r})"


def unmeasurable(scenario: Scenario, mark: BudgetMark, scale: str, device: DeviceInfo) -> tuple[str | None, bool]:
    """Why this case cannot be measured on `device` (the probe's), and whether the reason is a missing GPU."""
    if scale not in scenario.scales:
        return f"scenario {scenario.name!r} has no {scale!r} scale (it has: {', '.join(scenario.scales)})", False
    if mark.pinned and mark.device == "cpu" and scenario.needs_cuda(scale):  # a VRAM budget so pinned: refused (marks)
        return (f"the test pins device='cpu', but scenario {scenario.name!r} at scale {scale!r} needs CUDA: nothing "
                "on the GPU would be measured"), False
    if scenario.needs_cuda(scale) and not device.cuda:
        return f"scenario {scenario.name!r} at scale {scale!r} needs a CUDA GPU; {none_here(device)}", True
    if mark.pinned and mark.device == "cuda" and not device.cuda:
        return f"the test pins device='cuda'; {none_here(device, 'no CUDA GPU')}", True
    if mark.budget.vram is not None and not device.cuda and mark.expect == "over-budget" and mark.budget.ram is None:
        return (f"expect='over-budget' rests on the VRAM budget {format_size(mark.budget.vram)} alone, which needs a "
                f"CUDA GPU to check; {none_here(device)}"), True
    if (mark.card is not None and not mark.pinned and not device.cuda and mark.expect == "over-budget"
            and mark.budget.ram is None and mark.budget.vram is None):  # on CUDA the card is its VRAM budget (marks.py)
        return (f"expect='over-budget' rests on card={mark.card.given!r} alone (on CUDA, the VRAM budget "
                f"{format_size(mark.card.capacity)} it stands for), which needs a CUDA GPU to check; "
                f"{none_here(device)}"), True
    needed = scenario.gpus_needed
    if needed > 1 and device.cuda and device.gpus < needed:
        each = "one GPU each" if needed == scenario.ranks else f"on {needed} GPUs"
        return (f"scenario {scenario.name!r} launches {scenario.ranks} ranks, {each}; this worker measures on "
                f"{device.gpus} (give each worker {needed}: --gpu-budget-gpus-per-worker="
                f"{needed}, on a host with that many GPUs per xdist worker)"), True
    memory = device.gpu_memory  # this GPU's total
    if mark.card is not None and mark.device == "cuda" and memory and more_than(mark.card.capacity, memory):
        return (f"card={mark.card.given!r} asks for {mark.card.label}, more than this GPU's total memory "
                f"{format_size(memory)} ({device.gpu_name}): a smaller card cannot run as a bigger one (the cap only "
                "lowers the allocator's limit); it is measured on a card with at least that much memory"), False
    if mark.budget.vram is not None and memory and more_than(mark.budget.vram, memory):
        return (f"VRAM budget {format_size(mark.budget.vram)} is above this GPU's total memory {format_size(memory)} "
                f"({device.gpu_name}): the card cannot reach it, so the budget would test nothing (an "
                "over-budget run dies of out-of-memory first); it is measured on a card with more memory"), False
    return _host_too_small(mark, device), False


def _host_too_small(mark: BudgetMark, device: DeviceInfo) -> str | None:
    """Why a reproduction resting on its RAM budget cannot run here: the host's memory (or its cgroup's limit) is below
    the budget, so the run dies of out-of-memory before reaching it, which shows only that the host is small."""
    ram, room = mark.budget.ram, device.host_memory
    if mark.expect != "over-budget" or ram is None or not room or ram <= room or (mark.budget.vram is not None and device.cuda):
        return None
    return (f"expect='over-budget' rests on the RAM budget {format_size(ram)}, above this host's memory "
            f"{format_size(room)} (its RAM, or its cgroup's memory limit where lower): the host cannot reach it, so the "
            "reproduction would test nothing (an over-budget run dies of out-of-memory first); it is measured on a host "
            "with more memory")


def probe_unmeasurable(scenario: Scenario, mark: BudgetMark, scale: str, device: DeviceInfo) -> tuple[str | None, bool]:
    """unmeasurable() for an unjudged probe (peak()): a probe under a VRAM budget compares GPU figures, which a host
    without CUDA never reports, so there it is skipped rather than run on the CPU."""
    reason, needs_gpu = unmeasurable(scenario, mark, scale, device)
    if reason is None and mark.budget.vram is not None and not device.cuda:
        return (f"VRAM budget {format_size(mark.budget.vram)} needs a CUDA GPU to measure; {none_here(device)} (an "
                "unjudged probe under it compares GPU figures)"), True
    return reason, needs_gpu


def unchecked_budget(mark: BudgetMark, device: DeviceInfo) -> str | None:
    """The VRAM budget this host cannot check, named, or None: a declared one, or the card= standing for one on CUDA
    (a case with a card alone would otherwise pass here with nothing said of its card)."""
    if device.cuda:
        return None
    if mark.budget.vram is not None:
        return f"VRAM budget {format_size(mark.budget.vram)}"
    if mark.card is not None:  # a test pinned to the CPU has none (marks.py refuses it)
        return f"card={mark.card.given!r} (on CUDA, its cap and the VRAM budget {format_size(mark.card.capacity)})"
    return None


def unchecked_vram(mark: BudgetMark) -> int | None:
    """The VRAM budget unchecked_budget() names, in bytes, for the row's budget column ("VRAM ... unchecked"): the
    declared one, else the card's memory, which a card stands for on CUDA (a row of "RAM 4.00 GiB" alone read as a
    test with no VRAM budget)."""
    if mark.budget.vram is not None or mark.card is None:
        return mark.budget.vram
    return mark.card.capacity


def vram_unchecked(mark: BudgetMark, device: DeviceInfo) -> str | None:
    """Why the mark's VRAM budget (or card) is not checked on this host, or None: on a host without CUDA the case
    trains on the CPU, so its host RAM is gated and the row says the VRAM budget was not (no GPU figure comes from a
    CPU host)."""
    what = unchecked_budget(mark, device)
    if what is None:
        return None
    return f"{what} not checked: {none_here(device, 'no CUDA GPU')} (the case ran on the CPU; host RAM is gated)"


def vram_unmeasured(scenario: Scenario, mark: BudgetMark, measurement: Measurement) -> str | None:
    """Why a VRAM budget tested nothing on a run that finished on a GPU host, or None: a command whose processes
    reported no GPU figure (its own code never initialised CUDA, or the gate's hook never ran in it) would
    otherwise pass a VRAM budget with no figure behind the verdict."""
    whose = ("its ranks' processes" if scenario.ranks > 1 else "its own process") if scenario.command is not None \
        else "its run"
    return unmeasured.vram(mark.budget, measurement, whose,
                           ", or the gate's hook did not run there (the row's message and info say which)")


def imbalance_unmeasured(mark: BudgetMark, measurement: Measurement) -> str | None:
    """Why an imbalance= budget tested nothing on a run that finished, or None: a run of fewer than two ranks (no
    launcher, or one rank) has no ratio to bound, and would pass it unseen."""
    return unmeasured.imbalance(mark.budget, measurement, "the case", " (docs/several-ranks.md)")


def environment_skips(failed: EnvironmentFailed, device: DeviceInfo) -> bool:
    """An environment that needs another torch is a skip on a host without CUDA (the registry's Linux torch is a CUDA
    build, which such a host could not run as it is meant to), and an error where a GPU would run it."""
    return failed.kind == "torch" and not device.cuda
