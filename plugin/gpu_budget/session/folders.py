"""Where a session keeps what outlives it: prepared assets, and the environments cases declare."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from gpu_budget.session.options import blocked

IGNORED = "# made by pytest-gpu-budget: prepared assets or environments, kept across runs\n*\n"


def assets_folder(config: pytest.Config, made: bool) -> Path:
    """Where prepared assets (checkpoints, clips) are kept: $GPU_BUDGET_ASSETS, else pytest's cache.

    Real-scale checkpoints are gigabytes and take minutes to build; a CI checkout
    wipes the workspace (and pytest's cache in it), so a self-hosted runner points
    GPU_BUDGET_ASSETS at a folder of its own. Assets are keyed by what builds them
    (Scenario.asset_key), so a kept folder is never stale. `made`: a gated session, which makes the rootdir's folder
    where there is no cache (none is made otherwise), and in which a GPU_BUDGET_ASSETS that cannot be a folder (a
    file, or under one) is a usage error, not a traceback from the first case that prepares.
    """
    env = os.environ.get("GPU_BUDGET_ASSETS", "").strip()
    if env:
        folder = Path(env).expanduser().resolve()
        why = blocked(folder, folder=True) if made else None  # a run without the gate prepares nothing: not stopped
        if why:
            raise pytest.UsageError(f"GPU_BUDGET_ASSETS={env!r}: {folder} {why}")
        return folder
    cache = getattr(config, "cache", None)  # absent with -p no:cacheprovider
    return Path(str(cache.mkdir("gpu-budget-assets"))) if cache else _in_rootdir(config, ".gpu-budget-assets", made)


def environments_folder(config: pytest.Config, given: Path | None) -> Path:
    """Where the environments cases declare are kept: --gpu-budget-envs, else pytest's cache (kept across runs). A
    chosen folder is told to git as ignored, as the default one is, where it is the session's (`_ignored`)."""
    if given is not None:
        _ignored(given)
        return given
    cache = getattr(config, "cache", None)  # absent with -p no:cacheprovider
    return Path(str(cache.mkdir("gpu-budget-envs"))) if cache else _in_rootdir(config, ".gpu-budget-envs", True)


# what make() keeps there (pip-config: pip_readings.KEPT)
ENVIRONMENT_ENTRIES = re.compile(r"^(env-[0-9a-f]+(\.lock)?|resolved|failed|pip-config|\.gitignore)$")


def _ignored(folder: Path) -> None:
    """Write the ignore marker into a chosen environments folder (a project's `envs/`: its venvs one `git add -A` from
    a commit otherwise): made now, or holding only what environments are kept as. A folder holding files of the user's
    own, or a .gitignore, is left as it is; one that cannot be written is left for the write that needs it to name."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if all(ENVIRONMENT_ENTRIES.match(entry.name) for entry in folder.iterdir()) and \
                not (folder / ".gitignore").exists():
            (folder / ".gitignore").write_text(IGNORED)
    except OSError:
        pass


def _in_rootdir(config: pytest.Config, name: str, made: bool) -> Path:
    """A folder of the rootdir in place of pytest's cache, which git is told to ignore (as pytest tells it of its own
    cache folder), so checkpoints and environments of gigabytes are not committed with the project; a rootdir that
    cannot be written is left for the write that needs the folder to name."""
    folder = Path(str(config.rootpath)) / name
    if made:
        try:
            folder.mkdir(exist_ok=True)
            if not (folder / ".gitignore").exists():
                (folder / ".gitignore").write_text(IGNORED)
        except OSError:
            pass
    return folder
