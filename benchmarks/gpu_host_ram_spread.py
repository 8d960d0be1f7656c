"""Why S1's host RAM moves between fresh children on a CUDA host: a probe for the GPU host.

On an H200, S1 as reported (real scale) read less host RAM in a second
session than in the first, the difference all in its first train step, while
its allocated VRAM reproduced to the byte (benchmarks/results/gpu-real-*.report.json).
The Trainer pins its DataLoader's batches by default, and torch's
pinned-memory cache reuses a block only once the GPU has finished with it, so
how much it holds could depend on timing. This probe measures the case in fresh
children, pinning on and off interleaved, and writes every child's figures
(GPU_BUDGET_SPREAD_JSON) for docs/gpu-results.md:

    pytest benchmarks/gpu_host_ram_spread.py --gpu-budget --gpu-budget-scale=real --gpu-budget-probes -p no:randomly

What it found (the driver's JIT, not pinning) is on that page. A CUDA host
only: on a CPU the Trainer pins nothing, so it skips with the reason.
"""

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "memtests"))
from s1_wav2vec2.scenarios import AS_REPORTED

RUNS = int(os.environ.get("GPU_BUDGET_SPREAD_RUNS", "5"))  # per setting


@pytest.mark.gpu_budget_probe
def test_s1_host_ram_with_and_without_pinned_batches(gpu_budget):
    if gpu_budget.device != "cuda":
        pytest.skip("pinned DataLoader memory exists only on a CUDA host")
    rows = []
    for run in range(RUNS):
        for pin in (True, False):
            m = gpu_budget.peak(AS_REPORTED.with_params(pin_memory=pin))
            assert m.ok, m.error
            rows.append({"run": run, "pin_memory": pin, "peaks": dict(m.peaks.to_json()),
                         "phases": {name: {"ram_tree_peak": p.ram_tree_peak, "ram_peak": p.ram_peak,
                                           "vram_allocated": p.vram_allocated}
                                    for name, p in m.phases.items()}})
            print(f"run {run} pin_memory={pin}: host RAM {m.peaks.ram_tree / 2**20:.1f} MiB, "
                  f"allocated {m.peaks.vram_allocated} B")
    out = os.environ.get("GPU_BUDGET_SPREAD_JSON")
    if out:
        Path(out).write_text(json.dumps({"case": "s1 as reported, real", "rows": rows}, indent=1))
