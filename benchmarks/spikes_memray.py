"""The planted spikes as pytest tests under pytest-memray's `limit_memory`, run by benchmarks/fidelity.py.

Each test plants one spike (benchmarks.spikes.plant) and carries
`limit_memory` at half the planted size, so pytest-memray's own verdict says
whether it saw the spike; its peak (the sum of memray's high-watermark
records, what limit_memory compares) is read back from the kept .bin files.
Not collected by the project's test runs (testpaths are tests/ and memtests/).

    BENCH_SPIKE_REPS=10 pytest benchmarks/spikes_memray.py --memray --memray-bin-path DIR -p no:cacheprovider
"""

import gc
import os
import time

import numpy  # noqa: F401  imported before any test, as in spikes.run
import pytest
import torch  # noqa: F401

from benchmarks.common import MIB
from benchmarks.spikes import SETTLE_S, plan, plant
from gpu_budget.isolate.child import steady_malloc

STEADY = steady_malloc()  # the same allocator set-up as the other tools' processes
CASES = plan(int(os.environ.get("BENCH_SPIKE_REPS", "1")))


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.limit_memory(f"{c['mib'] / 2} MB"),
                                                id=f"{c['kind']}-{c['mib']}-{c['ms']}-{c['rep']}") for c in CASES])
def test_spike(case):
    gc.collect()
    time.sleep(SETTLE_S)
    plant(case["kind"], case["mib"] * MIB, case["ms"] / 1000)
