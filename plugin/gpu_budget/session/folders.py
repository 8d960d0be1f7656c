"""Where a session keeps what outlives it: prepared assets, and the environments cases declare."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def assets_folder(config: pytest.Config) -> Path:
    """Where prepared assets (checkpoints, clips) are kept: $GPU_BUDGET_ASSETS, else pytest's cache.

    Real-scale checkpoints are gigabytes and take minutes to build; a CI checkout
    wipes the workspace (and pytest's cache in it), so a self-hosted runner points
    GPU_BUDGET_ASSETS at a folder of its own. Assets are keyed by what builds them
    (Scenario.asset_key), so a kept folder is never stale.
    """
    env = os.environ.get("GPU_BUDGET_ASSETS", "").strip()
    if env:
        return Path(env).expanduser().resolve()
    cache = getattr(config, "cache", None)  # absent with -p no:cacheprovider
    return Path(str(cache.mkdir("gpu-budget-assets"))) if cache else Path(str(config.rootpath)) / ".gpu-budget-assets"


def environments_folder(config: pytest.Config, given: Path | None) -> Path:
    """Where the environments cases declare are kept: --gpu-budget-envs, else pytest's cache (kept across runs)."""
    if given is not None:
        return given
    cache = getattr(config, "cache", None)  # absent with -p no:cacheprovider
    return Path(str(cache.mkdir("gpu-budget-envs"))) if cache else Path(str(config.rootpath)) / ".gpu-budget-envs"
