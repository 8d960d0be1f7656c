"""A function case whose DataLoader worker is SIGKILLed (the kernel's OOM killer picks the process that grew): torch
raises "DataLoader worker (pid(s) N) exited unexpectedly" in run(ctx), which is that kill, as a command case reads it
(isolate/command.py _ended, oom.worker_killed); a worker ended by another signal is no such kill."""

import json
import re
import textwrap

import pytest

RUNNERS = '''
import os, signal
from torch.utils.data import DataLoader, Dataset


class Held(Dataset):
    def __init__(self, sig):
        self.sig = sig

    def __len__(self):
        return 8

    def __getitem__(self, i):
        held = bytearray(96 << 20)
        held[::4096] = b"x" * len(held[::4096])  # touched: resident
        os.kill(os.getpid(), getattr(signal, self.sig))  # SIGKILL: as the kernel's OOM killer would


def run(ctx):
    ctx.meter.start("load")
    for batch in DataLoader(Held(ctx.params["sig"]), batch_size=2, num_workers=1):
        pass
    return {}
'''


@pytest.mark.usefixtures("torch")  # imported before pytester notes sys.modules: tests/imported_once.py
def test_a_dataloader_worker_sigkilled_in_a_function_case_reads_as_that_kill(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS)
    pytester.makepyfile(test_mem=textwrap.dedent('''
        import pytest
        from gpu_budget import Scenario


        @pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
        @pytest.mark.gpu_budget(ram="48 MiB", expect="over-budget")
        def test_worker(gpu_budget, sig):
            gpu_budget.measure(Scenario(name="w", run="runners:run", params={"sig": sig}))
    '''))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    rows = {r["nodeid"].split("::")[-1]: r for r in json.loads((pytester.path / "r.json").read_text())["results"]}
    killed, ended = rows["test_worker[SIGKILL]"], rows["test_worker[SIGTERM]"]
    assert (killed["verdict"], killed["passed"], killed["error"]["kind"]) == ("over-budget", True, "killed"), killed
    assert re.search(r"its DataLoader worker \(pid \d+\) was killed by SIGKILL \(the kernel's OOM killer sends "
                     r"SIGKILL\)", killed["error"]["message"]), killed["error"]
    assert ended["error"]["kind"] == "exception" and "SIGKILL" not in ended["error"]["message"], ended["error"]
    result.assert_outcomes(passed=1, failed=1)
