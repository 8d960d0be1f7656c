"""A command whose script, or a run(ctx), SIGKILLs a helper it started and exits 0 (isolate/oom_killed.py): the kernel's OOM killer
sends SIGKILL, so the row says what was seen; the kernel's count of OOM kills did not rise, so it is a note, not a
failure (the real OOM killer cannot be set off safely here: tests/unit/test_oom_kills.py reads a faked counter)."""

import json
import re
import textwrap

import pytest

KILLS_HELPER = '''
import os, signal, subprocess, sys, time
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "helper-of-the-case"])
time.sleep(1.5)  # read by the tree while it runs, even by a poller a loaded runner starves
os.kill(helper.pid, signal.SIGKILL)
time.sleep(1.5)  # a zombie the tree finds before it is reaped (0.3 s was missed once under CI load)
helper.wait()
'''

RUNNER = '''
def run(ctx):
    exec(open("kills.py").read(), {})
    return {}
'''


@pytest.mark.parametrize("case", ["command", "run(ctx)"])
def test_a_helper_sigkilled_by_the_script_is_a_note_naming_it(pytester, monkeypatch, case):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(kills=KILLS_HELPER, runners=RUNNER)
    scenario = 'command=[sys.executable, "kills.py"]' if case == "command" else 'run="runners:run"'
    pytester.makepyfile(test_mem=textwrap.dedent(f'''
        import sys
        import pytest
        from gpu_budget import Scenario


        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_kills(gpu_budget):
            gpu_budget.measure(Scenario(name="k", {scenario}))
    '''))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1)
    row = json.loads((pytester.path / "r.json").read_text())["results"][0]
    said = " ".join(row["info"].get("notes", []))
    assert re.search(r"process \d+ \(\S+ -c 'import time; time.sleep\(30\)' helper-of-the-case\) of the case was "
                     r"killed by SIGKILL while the case ran \(the kernel's OOM killer sends SIGKILL\), but the "
                     r"kernel's count of OOM kills \([^)]+\) did not rise", said), row["info"]
