"""A command's process the tree never read gets the kernel's own figure of it, where that figure is its own
(gpu_budget/measure/kernel_floor.py); real processes, a tree that polls only when told."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpu_budget.measure import kernel_floor, procfs
from gpu_budget.measure.meter import Meter, can_reset_hwm
from gpu_budget.measure.tree import ProcessTree
from gpu_budget.measure.tree import available as tree_available

MiB = 2**20

pytestmark = pytest.mark.skipif(not (can_reset_hwm() and tree_available()), reason="needs /proc (Linux)")


def measured(code: str, read_while_running: bool = False) -> Meter:
    """Run `python -c code` under an external meter whose tree polls only at the phase's start and end (and once while
    it runs where asked), reaped with kernel_floor.reap as a command case reaps it; the meter after its one phase."""
    meter = Meter(external=True, use_cuda=False, tree=ProcessTree(interval=3600, count_root=False))
    meter.start("run")
    proc = subprocess.Popen([sys.executable, "-S", "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    meter.follow(proc.pid)
    if read_while_running:
        assert proc.stdout.readline() == b"held\n"  # allocated, and waiting for its stdin to close
        meter.tree.poll()
    proc.stdin.close()
    proc.stdout.close()
    while (ended := kernel_floor.reap(proc.pid)) is None:
        time.sleep(0.005)
    proc.returncode, meter.kernel = ended
    meter.stop()
    meter.close()
    assert proc.returncode == 0
    return meter


def allocating(extra: int) -> str:
    """Code that holds this process's high-water mark and `extra` more: above the image it is started from."""
    size = procfs.status("self").hwm + extra
    return f"x = bytearray({size})"  # filled with zeros: every page written


def test_a_process_never_read_gets_the_kernels_high_water_mark_as_its_floor():
    extra = 96 * MiB
    size = procfs.status("self").hwm + extra
    meter = measured(allocating(extra))
    record, kernel = meter.phases[0], meter.kernel
    assert kernel.own and meter.floored == kernel and not meter.unread
    assert record.ram_peak == record.ram_tree_peak == kernel.maxrss >= size
    assert record.tree.whole.get(meter._main, 0) == 0  # the tree itself never read it
    assert "floor from the kernel's high-water mark" in kernel.floor_note()


def test_a_process_the_tree_read_keeps_the_trees_figure():
    code = allocating(64 * MiB) + "; import sys; print('held', flush=True); sys.stdin.read()"
    meter = measured(code, read_while_running=True)
    assert meter.floored is None and not meter.unread
    assert meter.phases[0].ram_peak == meter.phases[0].tree.whole[meter._main] > 64 * MiB


def test_a_process_smaller_than_the_image_it_started_from_has_no_figure():
    # In a fresh interpreter, as in a measuring child: the tree's root is this test process, and under xdist its
    # worker keeps other children of earlier tests (a forkserver), whose figures the tree's sum would hold.
    check = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_kernel_floor as t; "
             "m = t.measured('pass'); print(m.kernel.own, m.floored, m.unread, m.phases[0].ram_peak)")
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "None", "True", "None"]  # its own pages are fewer than its parent's (ru_maxrss): no figure
    said = kernel_floor.unmeasured("python -c pass", kernel_floor.KernelPeak(10 * MiB, 20 * MiB))
    assert "no host-RAM figure of command 'python -c pass'" in said and "bounds the command from above only" in said
