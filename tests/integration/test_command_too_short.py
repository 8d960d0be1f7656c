"""A command that ends before the gate's first sample of its tree (plugin/gpu_budget/measure/kernel_floor.py).

The tree is polled every 10 ms, so a command that lives a millisecond is most
often never read: its row must then hold the kernel's own figure of it, or fail
as unmeasured, never pass (or record a baseline) with 0 B of host RAM.
"""

import json
import shutil

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
