"""What a test's inner pytest session (pytester, in a subprocess) left behind: its report's rows, live processes.

Shared by the command tests (test_command.py, test_command_edges.py, test_ranks.py) and the xdist ones
(test_xdist.py, test_memtests_order.py); a plain
module, not a test module, so no test module imports another. tests/integration is on sys.path
(pytest's prepend import mode), which is how they import it.
"""

import json
import os
import sys
import time

from gpu_budget.measure import procfs

# a test module measuring runners.py's run under a 300 MiB RAM budget, one case
ONE_CASE = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="300 MiB")
def test_one(gpu_budget):
    gpu_budget.measure(Scenario(name="one", run="runners:run"))
'''

# a test module measuring train.py (stepping_then_asleep) as a command under a 2 GiB RAM budget, one case
SLOW_CASE = f'''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_slow(gpu_budget):
    gpu_budget.measure(Scenario(name="slow", command=[{sys.executable!r}, "train.py"]))
'''


def stepping_then_asleep(steps: int, seconds: int, before: str = "") -> str:
    """A command's script that marks `steps` steps, each keeping 30 MiB more, then sleeps `seconds` (past a timeout,
    or until something stops it); `before`: lines it runs first."""
    return f'''
import time
import gpu_budget
{before}
held = []
for _ in range({steps}):
    gpu_budget.step()
    held.append(b"\\x01" * (30 * 2**20))
time.sleep({seconds})
'''


def rows(pytester) -> dict:
    """The inner session's JSON report (written to r.json) by test id: the part of each nodeid after its module."""
    data = json.loads((pytester.path / "r.json").read_text())
    return {r["nodeid"].split("::", 1)[1]: r for r in data["results"]}


def survivors(marker: str) -> list[str]:
    """Command lines of live processes holding `marker` (zombies hold no command line and are not counted)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            found.append(f"{entry.name}: {cmd}")
    return found


def alive(pid: int) -> bool:
    """Running: /proc has it and it is not a zombie (procfs.read_stat, the gate's own reader)."""
    return procfs.read_stat(pid) is not None


def left_after(pids: list[int], seconds: float) -> list[int]:
    """Of `pids`, those still running `seconds` from now; at once where none is."""
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


# what this suite's own run leaves in the environment that an inner session must not inherit: CI (it fails a case
# without a baseline), the outer xdist worker's GPU pin and its worker variables
OUTER_RUN = ("CI", "CUDA_VISIBLE_DEVICES", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


def leave_outer_run(monkeypatch) -> None:
    """Unset OUTER_RUN for the inner sessions this test starts."""
    for var in OUTER_RUN:
        monkeypatch.delenv(var, raising=False)


def run_on_stand_in(pytester, *args: str):
    """A gated inner session of a stand-in CUDA project (conftest.fake_cuda): serial, in collection order, its JSON
    report in r.json (rows above reads it), skip reasons shown."""
    return pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
                                         "--gpu-budget", "--gpu-budget-json=r.json", "-rs", *args)
