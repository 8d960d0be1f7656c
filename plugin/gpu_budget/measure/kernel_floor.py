"""The kernel's own high-water mark of a command's process: its host-RAM figure where the tree never read it.

The tree polls every 10 ms (tree.py), so a command that exits sooner (a
non-Python program, or a Python one the gate's hook never ran in, which sends
no exit report) may never be read, and its figure would be 0 B. Reaping it
with wait4 gives the kernel's own figure for free: ru_maxrss, the largest
resident set of that process or of a descendant it waited for, each alone
(never the tree's sum). It also holds the image the process had before its
exec, the gate's own pages, copied or borrowed (vfork) as it started (a
spawned worker's ru_maxrss is its parent's pre-exec peak: tree.py). The gate's
own high-water mark as it reaps the process bounds that image from above, so
a figure above it is the command's own; one at or below it only bounds the
command from above, and the case has no host-RAM figure: it fails as
unmeasured rather than pass, or record a baseline, on 0 B.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from gpu_budget.measure.procfs import status
from gpu_budget.units import format_size


@dataclass(frozen=True)
class KernelPeak:
    """wait4's ru_maxrss of the command's process (bytes), and the gate's own VmHWM as it reaped it (bytes)."""

    maxrss: int
    image: int

    @property
    def own(self) -> bool:
        """Whether the figure is the command's own, not the gate's image it started from."""
        return self.maxrss > self.image

    def floor_note(self) -> str:
        """What the row says where this figure stands in for the samples."""
        return (f"host RAM is the floor from the kernel's high-water mark ({format_size(self.maxrss)}, wait4's "
                "ru_maxrss): the command's process exited before the gate's first sample; it is the largest resident "
                "set of that process or of one it waited for, not the tree's sum")


def unmeasured(shown: str, peak: KernelPeak | None) -> str:
    """Why a command case has no host-RAM figure at all: the tree never read its process, and the kernel's figure of
    it (`peak`; None: it was reaped elsewhere) is not its own."""
    kernel = ("" if peak is None else f", and the kernel's high-water mark of it ({format_size(peak.maxrss)}) is no "
              f"more than the gate's own process it started from ({format_size(peak.image)}), so it bounds the "
              "command from above only")
    return (f"no host-RAM figure of command {shown!r}: it exited before the gate's first sample of its tree{kernel}; "
            "nothing is judged or recorded (a budget or baseline would test nothing): measure a command that runs "
            "longer, or a Python one (the gate's hook reports each Python process's figure as it exits)")


def reap(pid: int) -> tuple[int, KernelPeak | None] | None:
    """Reap `pid` if it exited: (its exit code as subprocess gives it, the kernel's figure of it); None while it runs.
    A process reaped elsewhere gives 0 and no figure (as subprocess.Popen.poll does)."""
    try:
        reaped, wait_status, usage = os.wait4(pid, os.WNOHANG)
    except ChildProcessError:
        return 0, None
    if reaped == 0:
        return None
    maxrss, own = usage.ru_maxrss * 1024, status("self")  # ru_maxrss is in KiB on Linux
    return os.waitstatus_to_exitcode(wait_status), KernelPeak(maxrss, own.hwm if own is not None else maxrss)
