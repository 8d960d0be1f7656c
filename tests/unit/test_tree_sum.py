"""The tree figure is the peak over time of the summed tree: processes that never coexist are not added up,
processes alive together are. Real subprocesses, a real ProcessTree and Meter."""

import subprocess
import sys

import pytest

from gpu_budget.measure import tree
from gpu_budget.measure.meter import Meter, can_reset_hwm

MiB = 2**20
INTERPRETER = 40 * MiB  # a fresh Python's own pages besides its block (as tests/unit/test_tree.py allows an exec'd child)

pytestmark = pytest.mark.skipif(not (can_reset_hwm() and tree.available()), reason="needs /proc (Linux)")

# touch N MiB, say so, hold until stdin closes (or `hold` s with no stdin wait), exit
CHILD = """
import sys, time
block = b"\\x01" * (int(sys.argv[1]) << 20)
print("ready", flush=True)
if sys.argv[2] == "wait":
    sys.stdin.read()
else:
    time.sleep(float(sys.argv[2]))
"""


def child(mib: int, hold: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, str(mib), hold], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)


def ready(proc: subprocess.Popen) -> None:
    assert proc.stdout.readline().strip() == "ready"


def end(proc: subprocess.Popen) -> None:
    proc.communicate("")
    assert proc.returncode == 0


def others(detail: list[dict], ours: list[int]) -> int:
    """What descendants not started by the test added (a forkserver or resource tracker an earlier test in this
    process left running): they hold still, so they add about the same to every window and to the loose bound."""
    return sum(d.private_peak for d in detail if d.pid not in ours)


@pytest.fixture
def meter():
    m = Meter(use_cuda=False)
    yield m
    m.close()


def test_sequential_subprocesses_add_one_not_four(meter):
    """4 subprocesses of 100 MiB, one after another: the tree adds about one of them; the sum of per-process
    peaks (the loose bound kept beside it) adds all four."""
    meter.start("phase")
    pids = []
    for _ in range(4):
        proc = child(100, "0.15")  # held long enough for the 10 ms poller to read it alive
        pids.append(proc.pid)
        ready(proc)
        end(proc)
    record = meter.stop()
    added = record.ram_tree_peak - record.ram_peak - others(record.tree.detail, pids)
    assert 100 * MiB <= added <= 100 * MiB + INTERPRETER, record.tree
    assert record.tree.peak_sum >= 4 * 100 * MiB, record.tree
    assert record.tree.processes >= 4 and record.tree.windows > 4


def test_coexisting_subprocesses_add_up(meter):
    """2 subprocesses of 100 MiB alive together: the tree adds both."""
    meter.start("phase")
    procs = [child(100, "wait") for _ in range(2)]
    for proc in procs:
        ready(proc)
    meter.tree.poll()  # at least one window with both holding (the thread polls too)
    for proc in procs:
        end(proc)
    record = meter.stop()
    added = record.ram_tree_peak - record.ram_peak - others(record.tree.detail, [p.pid for p in procs])
    assert 2 * 100 * MiB <= added <= 2 * (100 * MiB + INTERPRETER), record.tree


def test_the_figure_is_the_largest_window_sum():
    """Polled by hand: A holds 100 MiB in one window, B 60 MiB in a later one; the phase's figure is A's window,
    the loose bound both; then both in one window: their sum."""
    t = tree.ProcessTree()  # no thread: every window is a poll() here
    try:
        t.phase_start()
        a = child(100, "wait")
        ready(a)
        t.poll()
        end(a)
        t.poll()  # A gone: its windows stand
        b = child(60, "wait")
        ready(b)
        t.poll()
        end(b)
        reading = t.phase_end()
        peaks = {d.pid: d.private_peak for d in reading.detail}
        rest = others(reading.detail, [a.pid, b.pid])
        assert peaks[a.pid] >= 100 * MiB and peaks[b.pid] >= 60 * MiB
        assert peaks[a.pid] <= reading.private <= peaks[a.pid] + rest, reading  # A's window, not A + B
        assert reading.peak_sum == peaks[a.pid] + peaks[b.pid] + rest, reading

        t.phase_start()
        both = [child(100, "wait"), child(60, "wait")]
        for proc in both:
            ready(proc)
        t.poll()
        for proc in both:
            end(proc)
        reading = t.phase_end()
        peaks = {d.pid: d.private_peak for d in reading.detail}
        assert reading.private >= peaks[both[0].pid] + peaks[both[1].pid] >= 160 * MiB, reading
    finally:
        t.close()
