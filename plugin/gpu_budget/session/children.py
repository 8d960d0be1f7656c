"""Runs one scenario in a fresh measured child, its assets prepared first: the function a case is handed.

The session builds one ChildRunner from its options; case.py, remediation and
exploration call it without knowing the options, the assets folder or the
forkserver behind it. A child during which the CUDA driver compiled kernels is
measured once more, with them cached (measure/compute_cache.py): its host RAM
held the compiler, which a machine whose cache is warm does not pay.

A case with an environment of its own (Scenario.environment, or a sweep's
version) is prepared and measured by that environment's helper
(isolate/remote.py), its assets kept apart (a checkpoint saved by one release
is loaded by the same one), and a command's program becomes the
environment's (isolate/program.py: one that would start another Python is
refused). Where the environment holds nothing the running one lacks, the
case runs here as usual.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType

from gpu_budget.declare.scenario import Scenario
from gpu_budget.isolate import forkserver
from gpu_budget.isolate.protocol import ScenarioJob, SnapshotRequest
from gpu_budget.isolate.remote import Remote
from gpu_budget.measure import compute_cache
from gpu_budget.model.card import Card
from gpu_budget.model.result import JitRerun, Measurement
from gpu_budget.session.environments import Environments
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
    environments: Environments | None = None  # where a scenario's own environment is made
    say: Callable[[str], None] | None = None  # a wait on another process's build of the assets, said at once

    def __call__(self, scenario: Scenario, cpu_only: bool = False,
                 snapshot: SnapshotRequest | None = None, card: Card | None = None) -> Measurement:
        """Measure `scenario` in a fresh child; cpu_only: the child (and its preparation) does not see the GPU.
        A scenario's environment that cannot be made raises EnvironmentFailed: nothing is measured. `snapshot`: a
        recording run's request. `card`: the measured processes run as on that card (their allocators capped)."""
        opts, scale = self.options, self.options.scale
        device = "cpu" if cpu_only else None
        made = self.environments.get(scenario.environment) if scenario.environment is not None else None
        job, key = ScenarioJob.of(scenario, scale), scenario.asset_key(scale)
        runner: Remote | ModuleType = forkserver  # a helper of another environment has forkserver's two calls
        if made is not None and made.overlay:
            # a command's program becomes the environment's, or is refused (OutsideEnvironment) before anything runs
            job = job.in_environment(made.python, ", ".join(made.requirements))
            key, runner = f"{key}-env-{made.key}", self.environments.remote(made)
        assets = self.assets / key
        if scenario.prepare:
            # unmeasured: as many threads as this process may use, to build real-scale models sooner
            runner.prepare_assets(scenario=job, assets=assets, timeout=opts.timeout,
                                  threads=len(os.sched_getaffinity(0)), preload=opts.preload,
                                  dispatch_mode=opts.dispatch, device=device, say=self.say)
        tensors = scenario.params.get("tensor_bytes", True)
        if not isinstance(tensors, bool):
            raise TypeError(f"{scenario.name}: scenario param tensor_bytes={tensors!r}: expected True or False")

        def once() -> Measurement:
            measured = runner.measure(scenario=job, assets=assets, timeout=opts.timeout, threads=opts.threads,
                                      preload=opts.preload, snapshot=snapshot, malloc=malloc_mode(scenario, opts.malloc),
                                      dispatch_mode=opts.dispatch, tensors=tensors, device=device,
                                      card=None if cpu_only else card)
            return measured if made is None else replace(measured, environment=made)

        cache = compute_cache.folder()
        before = compute_cache.size(cache)
        first = once()
        grown = compute_cache.size(cache) - before
        if cpu_only or snapshot is not None or not first.ok or grown <= 0:
            return first
        return replace(once(), jit_rerun=JitRerun(grown, first.peaks))

