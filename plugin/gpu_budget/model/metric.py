"""The figures a run is measured by, and every group of them the gate uses: one definition.

A `Metric` is a str, so it is its own JSON key (`peaks.to_json()` writes
"ram_tree") and a figure is read by it (`peaks.of(Metric.RAM_TREE)`). Each
group below is named for what it does; its order is the order rows and
messages list the figures in.
"""

from __future__ import annotations

from enum import Enum


class Metric(str, Enum):
    """One measured figure, in bytes.

    RAM: the main process's peak; RAM_TREE: with its descendants, the peak over
    time of their sum (the gated host-RAM figure); RAM_TENSOR: live CPU tensor
    bytes; VRAM_ALLOCATED / VRAM_RESERVED: torch's caching allocator (allocated
    is gated); VRAM_DEVICE: NVML's figure of the process; VRAM_TREE: NVML's
    figures of a command's processes, summed.
    """

    RAM = "ram"
    RAM_TENSOR = "ram_tensor"
    RAM_TREE = "ram_tree"
    VRAM_ALLOCATED = "vram_allocated"
    VRAM_RESERVED = "vram_reserved"
    VRAM_DEVICE = "vram_device"
    VRAM_TREE = "vram_tree"

    __str__ = str.__str__
    __format__ = str.__format__

    @property
    def gpu(self) -> bool:
        """A GPU figure: never measured on a host without CUDA."""
        return self in GPU

    @property
    def gated(self) -> bool:
        """Compared with a stored baseline (judge/compare.py)."""
        return self in GATED


M = Metric
ALL = tuple(Metric)
GPU = (M.VRAM_ALLOCATED, M.VRAM_RESERVED, M.VRAM_DEVICE, M.VRAM_TREE)
GATED = (M.RAM, M.RAM_TENSOR, M.VRAM_ALLOCATED)  # against a baseline; RAM is the tree's where both were read
SPREAD = (M.RAM, M.RAM_TREE, M.RAM_TENSOR, M.VRAM_ALLOCATED)  # what a baseline over several runs keeps the spread of
GROWTH = (M.RAM, M.RAM_TREE, M.VRAM_ALLOCATED, M.VRAM_RESERVED)  # what a run's per-step growth is read for
JUDGED_GROWTH = (M.RAM_TREE, M.RAM, M.VRAM_ALLOCATED)  # what the growth rule judges, so a recorded entry keeps
NODE = (M.RAM, M.RAM_TREE, M.VRAM_TREE)  # what a launcher node's own reading holds (the ranks' GPU peaks are theirs)
SHOWN = (M.RAM_TREE, M.RAM, M.VRAM_ALLOCATED)  # the figures a line names a case by, host RAM's tree first
REPORTED = (M.VRAM_ALLOCATED, M.VRAM_RESERVED, M.VRAM_DEVICE)  # what a command's own process reports of itself
LATER = (M.VRAM_DEVICE, M.VRAM_TREE)  # added after reports were committed: a step writes them where measured
