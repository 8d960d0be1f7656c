"""A side's run of the undecided cases only: a plugin each --against session loads (`-p`).

After one run per side, only the cases whose head figure falls where the tolerance cannot tell a change from
noise are measured again (verdict.undecided). Their sessions collect the user's whole selection as the first did (a
module that cannot be collected says so again) and this plugin deselects every test whose node id is not in the
file ONLY_ENV names, one per line. Without ONLY_ENV (the first pair, a session of the user's own) it does nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ONLY_ENV = "GPU_BUDGET_AGAINST_ONLY"  # a file of the node ids this session runs; the rest are deselected
PLUGIN = "gpu_budget.against.narrow"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    target = os.environ.get(ONLY_ENV)
    if not target:
        return
    wanted = {line for line in Path(target).read_text().splitlines() if line}
    dropped = [item for item in items if item.nodeid not in wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item.nodeid in wanted]
