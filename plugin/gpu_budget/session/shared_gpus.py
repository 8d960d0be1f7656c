"""The line saying that xdist workers measured on one GPU, so that a neighbour's memory is not read as a case's.

With more workers than GPUs, placement.py hands the GPUs out round robin,
and two workers' cases can then run on one card at the same time. Each
case's VRAM figure is still its own processes' (NVML by pid, the allocator
of its own child), but the card's memory is shared: a case can run out of
memory for its neighbour's, and a `card=` cap (measure/card_cap.py) limits
its own allocator only, not what the neighbour holds. A case that sets
CUDA_VISIBLE_DEVICES itself (in the test's environment, or a command's env=)
runs where it says, over its worker's GPU, and may so share a card with
another worker however many GPUs there are. The rows say which worker
measured on which GPU (Result.worker); this module reads them back.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from gpu_budget.isolate.placement import Placement
from gpu_budget.model.result import Result


def shared_gpu_lines(rows: Sequence[Result]) -> list[str]:
    """One line per GPU that more than one xdist worker measured on in this session; none where each had its own."""
    workers: defaultdict[str, set[str]] = defaultdict(set)
    own: defaultdict[str, list[str]] = defaultdict(list)  # the cases that set CUDA_VISIBLE_DEVICES themselves
    for row in (row for row in rows if row.worker):
        placement = Placement.from_json(row.worker)
        if placement.on is not None:
            workers[placement.on].add(placement.worker)
            if placement.seen is not None:
                own[placement.on].append(f"{row.nodeid} on {placement.worker}, placed on {placement.gpu or 'none'}")
    return [f"xdist workers {', '.join(sorted(names, key=_index))} measured on the same GPU "
            f"(CUDA_VISIBLE_DEVICES={gpu}), {_cause(own[gpu])}: their cases may have run on it at the same "
            f"time; each VRAM figure is still its own processes', but a case may have run out of memory for its "
            f"neighbour's, and a card= cap does not bound what the neighbour holds; {_remedy(own[gpu])}"
            for gpu, names in sorted(workers.items()) if len(names) > 1]


def _cause(own: list[str]) -> str:
    if not own:
        return "more workers than GPUs"
    return f"since a case set CUDA_VISIBLE_DEVICES itself, over its worker's GPU ({'; '.join(dict.fromkeys(own))})"


def _remedy(own: list[str]) -> str:
    if own:
        return "leave CUDA_VISIBLE_DEVICES to the gate under -n (in the test's environment and a command's env=)"
    return ("give -n at most the number of GPUs (or of GPU blocks, with --gpu-budget-gpus-per-worker) for cases that "
            "must have a card alone")


def _index(worker: str) -> tuple[int, str]:
    digits = worker.lstrip("gw")
    return (int(digits) if digits.isdigit() else -1, worker)
