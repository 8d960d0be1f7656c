"""The gate's command-line and ini options, read once into plain data (and checked, naming a bad value)."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gpu_budget import dispatch, isolate
from gpu_budget.explore import DEFAULT_EXAMPLES

DEFAULT_THREADS = 1  # torch threads per measured child; the fingerprint records it (benchmarks/RESULTS.md, "Across setups")


def is_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@dataclass
class Options:
    enabled: bool
    update: bool
    baselines: Path
    scale: str
    json: Path | None
    timeout: float
    threads: int
    preload: tuple[str, ...]
    plots: Path | None = None
    require_gpu: bool = False
    malloc: str = "steady"
    dispatch: str = "avx2"
    remediate: bool = False
    remediate_max_runs: int = 8
    snapshot: str = "rerun"
    explore: bool = False  # run the Hypothesis explorations (gpu_budget.explore())
    explore_examples: int = DEFAULT_EXAMPLES  # Hypothesis max_examples per exploration

    @classmethod
    def from_config(cls, config: pytest.Config) -> Options:
        root = Path(str(config.rootpath))
        value = config.getoption("gpu_budget_baselines") or config.getini("gpu_budget_baselines") or "baselines"
        folder = (root / value).resolve()
        if folder.exists() and not folder.is_dir():
            raise pytest.UsageError(f"--gpu-budget-baselines={value!r}: {folder} is not a folder (baselines live in "
                                    f"<folder>/<hardware key>/<test module>.json)")
        json_path = config.getoption("gpu_budget_json")
        plots = config.getoption("gpu_budget_plots")
        if plots and importlib.util.find_spec("matplotlib") is None:  # found without importing it
            raise pytest.UsageError("--gpu-budget-plots needs matplotlib: pip install 'pytest-gpu-budget[plots]'")
        # one by default, whatever the cores and the xdist workers: a second thread moved S5's tiny peak by 4 MiB
        threads = config.getoption("gpu_budget_threads")
        if threads < 0:
            raise pytest.UsageError(f"--gpu-budget-threads={threads}: expected a whole number >= 1")
        threads = threads or DEFAULT_THREADS
        preload = config.getini("gpu_budget_preload")
        return cls(
            enabled=bool(config.getoption("gpu_budget")),
            update=bool(config.getoption("gpu_budget_update")),
            baselines=folder,
            scale=config.getoption("gpu_budget_scale"),
            json=Path(json_path).resolve() if json_path else None,
            timeout=float(config.getoption("gpu_budget_timeout")),
            threads=threads,
            preload=tuple(preload) if preload is not None else isolate.DEFAULT_PRELOAD,
            plots=Path(plots).resolve() if plots else None,
            require_gpu=bool(config.getoption("gpu_budget_require_gpu")),
            malloc=config.getoption("gpu_budget_malloc"),
            dispatch=cpu_dispatch(config.getoption("gpu_budget_cpu_dispatch") or config.getini("gpu_budget_cpu_dispatch")),
            remediate=bool(config.getoption("gpu_budget_remediate")),
            remediate_max_runs=max_runs(config.getoption("gpu_budget_remediate_max_runs")),
            snapshot=config.getoption("gpu_budget_snapshot"),
            explore=bool(config.getoption("gpu_budget_explore")),
            explore_examples=examples(config.getoption("gpu_budget_explore_examples")),
        )

    @property
    def snapshots(self) -> Path:
        """Where memory snapshots of failing CUDA cases go: next to the JSON report."""
        return (self.json.parent if self.json else Path.cwd()) / "gpu-budget-snapshots"


def cpu_dispatch(value: Any) -> str:
    """--gpu-budget-cpu-dispatch / ini gpu_budget_cpu_dispatch: avx2 or native, or a usage error naming the value."""
    mode = str(value).strip()
    if mode not in dispatch.MODES:
        raise pytest.UsageError(f"gpu_budget_cpu_dispatch={value!r}: expected one of {', '.join(dispatch.MODES)}")
    return mode


def max_runs(value: Any) -> int:
    """--gpu-budget-remediate-max-runs: a whole number >= 1, or a usage error naming the value."""
    try:
        runs = int(str(value).strip())
    except ValueError:
        runs = 0
    if runs < 1:
        raise pytest.UsageError(f"--gpu-budget-remediate-max-runs={value!r}: expected a whole number >= 1")
    return runs


def examples(value: int) -> int:
    """--gpu-budget-explore-examples: 0 (the default, DEFAULT_EXAMPLES) or a whole number >= 1; else a usage error."""
    if value < 0:
        raise pytest.UsageError(f"--gpu-budget-explore-examples={value}: expected a whole number >= 1")
    return value or DEFAULT_EXAMPLES
