"""A user's script whose host RAM peak moves from run to run, and the memtest gating it as a command (shared by
test_record_runs.py and test_record_runs_git.py).

memtests/held.py holds 32 MiB plus a random amount that moves from run to
run, as a peak that depends on scheduling does: each run draws it from a
generator seeded by its own process id. So that four runs are sure to spread,
the k-th run of a recording draws within the k-th quarter of NOISE_MIB (the
file memtests/counter numbers the runs): four runs over 8 MiB spread 4 to 8
MiB, which the gate allows 6x (24 to 48 MiB), where the default tolerance
(0.5 % + 4 MiB) allows about 4.3 MiB at this size. With FIXED_MIB in the
session's environment a run holds that fixed amount instead.
"""

import json
import textwrap
from pathlib import Path

HELD = textwrap.dedent('''
    import fcntl
    import os
    import random

    fixed = os.environ.get("FIXED_MIB")
    if fixed:
        extra = float(fixed)
    else:
        with open(os.environ["COUNTER"], "r+") as counter:  # which run of the recording this is
            fcntl.flock(counter, fcntl.LOCK_EX)
            run = int(counter.read() or 0)
            counter.seek(0)
            counter.write(str(run + 1))
        quarter = float(os.environ["NOISE_MIB"]) / 4
        extra = (run % 4 + random.Random(os.getpid()).random()) * quarter
    held = b"\\x01" * int((32 + extra) * 2**20)
''')
BASE_MIB = "(32 + extra)"  # the held amount's expression in HELD: a planted change edits it

TEST = textwrap.dedent('''
    import sys
    from pathlib import Path

    import pytest
    from gpu_budget import Scenario

    HERE = Path(__file__).parent
    ENV = {"COUNTER": str(HERE / "counter"), "NOISE_MIB": "8"}  # FIXED_MIB: from the session's environment


    @pytest.mark.gpu_budget(ram="2 GiB")
    def test_noisy(gpu_budget):
        gpu_budget.measure(Scenario(name="noisy", command=[sys.executable, str(HERE / "held.py")], env=ENV))
''')


def write(root: Path) -> Path:
    """memtests/held.py, memtests/test_noisy.py and a counter at 0 under `root`; the memtests folder."""
    memtests = root / "memtests"
    memtests.mkdir(exist_ok=True)
    (memtests / "held.py").write_text(HELD)
    (memtests / "test_noisy.py").write_text(TEST)
    (memtests / "counter").write_text("0")
    return memtests


def run(pytester, name: str, *args: str):
    """One session over the project's memtests (no preload: the script is a command); its outcome and its one row
    of the JSON report."""
    report = pytester.path / f"r-{name}.json"
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-o", "gpu_budget_preload=", "--gpu-budget",
                                           f"--gpu-budget-json={report}", "memtests", *args)
    return result, json.loads(report.read_text())["results"][0]
