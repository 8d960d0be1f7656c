"""Repo-level wiring for this project's own runs.

The plugin is loaded through its pytest11 entry point; baselines live in
baselines/ (ini gpu_budget_baselines in pyproject.toml); the default scale is
tiny. Hypothesis runs derandomized under CI so the test suite is repeatable.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
