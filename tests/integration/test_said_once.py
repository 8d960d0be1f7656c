"""A failure is said once: a launcher trap's advice appears once in a session's output, with no traceback of the
plugin's own frames, and the section ends with a legend of the words it used (report/once.py, report/legend.py)."""

import re
import textwrap

RANKS = '''
import time
import torch.distributed  # noqa: F401  torch, but no process group: each rank trains alone
from gpu_budget import phase, step

phase("load")
held = b"\\x01" * (8 << 20)
for _ in range(2):
    step()
    time.sleep(0.1)
'''

TEST = '''
import sys
import pytest
from gpu_budget import Scenario

@pytest.mark.gpu_budget(ram="2 GiB")
def test_alone(gpu_budget):
    gpu_budget.measure(Scenario(name="ddp", ranks=2, command=[
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "ranks.py"]))
'''

ADVICE = "On a host without CUDA, make each rank call torch.distributed.init_process_group"


def test_a_launcher_traps_advice_is_printed_once_without_the_plugins_traceback(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(ranks=RANKS, test_mem=textwrap.dedent(TEST))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "-rA")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert out.count(ADVICE) == 1, out
    assert "each trained alone." in out and "(more in the test's failure report)" in out, out
    assert "Traceback" not in out and not re.search(r'File ".*gpu_budget', out), out
    assert "CommandFailed" not in out, out
    # the section's words, explained once at its end: those it printed, and no other
    legend = out[out.index("what the words above mean:"):]
    assert "\n  RAM tree: " in legend and "\n  import floor: " in legend and "\n  malloc: " in legend, legend
    assert "clean allowance" not in out and "floor taken off" not in out, out
