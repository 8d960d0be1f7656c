"""Runs one scenario in a fresh measured child, its assets prepared first: the function a case is handed.

The session builds one ChildRunner from its options; case.py, remediation and
exploration call it without knowing the options, the assets folder or the
forkserver behind it. A child during which the CUDA driver compiled kernels is
measured once more, with them cached (measure/compute_cache.py): its host RAM
held the compiler, which a machine whose cache is warm does not pay.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gpu_budget.declare.scenario import Scenario
from gpu_budget.isolate import forkserver
from gpu_budget.measure import compute_cache
from gpu_budget.results import JitRerun, Measurement
from gpu_budget.session.options import Options


def malloc_mode(scenario: Scenario, default: str, where: str = "") -> str:
    """The host allocator mode of a case: the scenario's `malloc` param, else --gpu-budget-malloc."""
    mode = scenario.params.get("malloc", default)
    if mode not in forkserver.MALLOC_MODES:
        raise ValueError(f"{where or scenario.name}: scenario param malloc={mode!r}: "
                         f"expected one of {', '.join(forkserver.MALLOC_MODES)}")
    return mode


@dataclass(frozen=True)
class ChildRunner:
    """Prepares (cached, unmeasured) and measures scenarios at the session's scale, with its options."""

    options: Options
    assets: Path  # session.assets_folder: prepared checkpoints and clips, keyed by Scenario.asset_key

    def __call__(self, scenario: Scenario, cpu_only: bool = False, snapshot: dict[str, Any] | None = None) -> Measurement:
        """Measure `scenario` in a fresh child; cpu_only: the child (and its preparation) does not see the GPU."""
        opts, scale = self.options, self.options.scale
        device = "cpu" if cpu_only else None
        job, assets = scenario.to_json(scale), self.assets / scenario.asset_key(scale)
        if scenario.prepare:
            # unmeasured: as many threads as this process may use, to build real-scale models sooner
            forkserver.prepare_assets(job, assets, opts.timeout, len(os.sched_getaffinity(0)), opts.preload,
                                   dispatch_mode=opts.dispatch, device=device)
        tensors = scenario.params.get("tensor_bytes", True)
        if not isinstance(tensors, bool):
            raise TypeError(f"{scenario.name}: scenario param tensor_bytes={tensors!r}: expected True or False")

        def once() -> Measurement:
            return forkserver.measure(job, assets, opts.timeout, opts.threads, opts.preload, snapshot=snapshot,
                                      malloc=malloc_mode(scenario, opts.malloc), dispatch_mode=opts.dispatch,
                                      tensors=tensors, device=device)

        cache = compute_cache.folder()
        before = compute_cache.size(cache)
        first = once()
        grown = compute_cache.size(cache) - before
        if cpu_only or snapshot is not None or not first.ok or grown <= 0:
            return first
        return replace(once(), jit_rerun=JitRerun(grown, first.peaks))
