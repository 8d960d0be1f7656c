"""A command that ends before the gate's first sample of its tree (plugin/gpu_budget/measure/kernel_floor.py).

The tree is polled every 10 ms, so a command that lives a millisecond is most
often never read: its row must then hold the kernel's own figure of it, or fail
as unmeasured, never pass (or record a baseline) with 0 B of host RAM.
"""

import json
import shlex
import shutil
import sys

import pytest
from inner_session import rows

CASES = 4  # `true` lives about a millisecond: each case is read by a poll only now and then


@pytest.fixture
def short_project(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(test_mem=f'''
        import pytest
        from gpu_budget import Scenario

        @pytest.mark.parametrize("k", range({CASES}))
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_short(gpu_budget, k):
            gpu_budget.measure(Scenario(name="t", command=["{shutil.which("true")}"]))
    ''')
    return pytester


def test_a_command_ended_before_the_first_sample_never_passes_or_records_0_b(short_project):
    result = short_project.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    found = rows(short_project)
    assert len(found) == CASES
    for nodeid, row in found.items():
        if row["error"] is None:  # read by a poll while it ran: a real figure
            assert row["peaks"]["ram_tree"] > 0, (nodeid, row["peaks"])
        else:  # never read: the kernel's figure of it is the gate's own image before the exec, no figure of its own
            assert row["error"]["kind"] == "unmeasured", row["error"]
            assert row["verdict"] == "error" and not row["passed"]
            assert row["ram_tree_bound"] is None and row["ram_tree_method"] is None  # no figure, no claim about it
    unmeasured = [row for row in found.values() if row["error"] is not None]
    if unmeasured:
        result.stdout.fnmatch_lines(["*no host-RAM figure of command*it exited before the gate's first sample*"])
    stored = short_project.path / "baselines" / "cpu-x86_64" / "test_mem.json"
    entries = json.loads(stored.read_text())["entries"]["tiny"] if stored.exists() else {}
    assert all(entry["peaks"]["ram_tree"] > 0 for entry in entries.values()), entries
    assert len(entries) == CASES - len(unmeasured)


def test_a_shell_that_leaves_its_job_in_the_background_records_the_tree_alone(pytester, monkeypatch):
    """`bash -c "job & exit 0"`: the shell exits within the first poll while its job holds 30 MiB. Its own figure
    was never read: it is none (null, `-`), never 0 B, and the tree's is gated and recorded; a 0 B main figure made
    the baseline write fail the whole session ("peaks.ram is 0")."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    job = "import time; b = bytearray(30 * 2**20); b[::4096] = bytes(len(b[::4096])); time.sleep(0.5)"
    pytester.makepyfile(test_mem=f'''
        import pytest
        from gpu_budget import Scenario

        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_bg(gpu_budget):
            job = {f"nohup {sys.executable} -c {shlex.quote(job)} >/dev/null 2>&1 & exit 0"!r}
            gpu_budget.measure(Scenario(name="bg", command=["bash", "-c", job]))
    ''')
    recorded = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-update",
                                             "--gpu-budget-json=r.json")
    assert recorded.ret == 0, recorded.stdout.str()
    row = rows(pytester)["test_bg"]
    assert row["peaks"]["ram_tree"] > 30 * 2**20, row["peaks"]
    assert row["peaks"]["ram"] != 0, row["peaks"]  # None where the shell was never read (most runs), else its own
    stored = json.loads((pytester.path / "baselines" / "cpu-x86_64" / "test_mem.json").read_text())
    assert stored["entries"]["tiny"]["test_mem.py::test_bg"]["peaks"]["ram_tree"] == row["peaks"]["ram_tree"]
    compared = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    assert compared.ret == 0, compared.stdout.str()
    assert rows(pytester)["test_bg"]["verdict"] == "pass"
