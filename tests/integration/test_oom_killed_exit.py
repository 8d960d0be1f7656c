"""A command, or a run(ctx), that fails after the kernel's OOM killer ended a process of its tree: the kill is the
case's end, as for one that exits 0 (isolate/oom_killed.py), so expect="over-budget" reproduces it.

The real OOM killer cannot be set off safely here: a preloaded module (imported by the forkserver, so in each child
it forks) fakes the kernel's count to rise between the child's two reads, as tests/unit/test_oom_kills.py fakes its
files; the script SIGKILLs a helper of its own, the process of the tree found gone without an exit report."""

import json
import textwrap

import pytest

FAKE_COUNT = '''
from gpu_budget.measure import oom_kills

_kills = iter(range(1000))


def _read(proc="/proc", cgroups="/sys/fs/cgroup"):
    return oom_kills.OomKills("/fake/memory.events", next(_kills), machine=False)


oom_kills.read = _read  # each read counts one more kill: the count rose while the case ran
'''

LOSES_HELPER = '''
import os, signal, subprocess, sys, time

def lose_helper():
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "helper-of-the-case"])
    time.sleep(1.5)  # read by the tree while it runs, even by a poller a loaded runner starves
    os.kill(helper.pid, signal.SIGKILL)
    time.sleep(1.5)  # a zombie the tree finds before it is reaped (0.3 s was missed once under CI load)
    helper.wait()

if __name__ == "__main__":
    lose_helper()
    sys.exit(1)  # as a script whose worker pool broke
'''

RUNNER = '''
from loses import lose_helper

def run(ctx):
    lose_helper()
    raise RuntimeError("a worker of the pool died")
'''


@pytest.mark.parametrize("case", ["command", "run(ctx)"])
def test_a_failure_after_an_oom_kill_is_that_kill(pytester, monkeypatch, case):
    """Before: a plain "exit" ("exited with 1") or "exception" failure, the verdict "error", and expect="over-budget"
    unmet."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload = fake_count\n")
    pytester.makepyfile(fake_count=FAKE_COUNT, loses=LOSES_HELPER, runners=RUNNER)
    scenario = 'command=[sys.executable, "loses.py"]' if case == "command" else 'run="runners:run"'
    pytester.makepyfile(test_mem=textwrap.dedent(f'''
        import sys
        import pytest
        from gpu_budget import Scenario


        @pytest.mark.gpu_budget(ram="1 MiB", expect="over-budget")
        def test_lost(gpu_budget):
            gpu_budget.measure(Scenario(name="k", {scenario}))
    '''))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    row = json.loads((pytester.path / "r.json").read_text())["results"][0]
    assert (row["error"]["kind"], row["verdict"]) == ("killed", "over-budget"), row["error"]
    said = "exited with 1, and" if case == "command" else "failed (RuntimeError: a worker of the pool died), and"
    assert f"{said} the kernel's OOM killer killed 1 process(es) in its cgroup" in row["error"]["message"], row["error"]
    assert "oom_kill in /fake/memory.events went from 0 to 1" in row["error"]["message"], row["error"]
    result.assert_outcomes(passed=1)
