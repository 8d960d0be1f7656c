"""A test run again on the same item (pytest-rerunfailures' --reruns, its flaky marker): each attempt starts afresh.

Such a plugin runs the item's setup, call and teardown once more, so what an
earlier attempt left on the item would carry over: the rerun's measure() failed
as "called twice", and the failed attempt's row stood beside the rerun's with
its entry counted as withheld. pytest reports the last attempt, so the table,
the reports and the baselines hold that attempt's cases alone.
"""

from __future__ import annotations

import pytest

from gpu_budget.session import held, own_rows, unmeasured
from gpu_budget.session.data import SessionData

PROPERTY = "gpu_budget_"  # the prefix of the test properties measure() and explore() add (junitxml writes them)


class Attempts:
    """The plugin that clears an earlier attempt's record as each attempt of a test starts its setup."""

    def __init__(self, data: SessionData) -> None:
        self.data = data

    @pytest.hookimpl(tryfirst=True)  # before the fixtures set up: one may measure there
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        restart(item, self.data)


def restart(item: pytest.Item, data: SessionData) -> None:
    """Forget what an earlier attempt of `item`'s test measured, held and noted; nothing on a first attempt."""
    for row in own_rows.forget(item, data.rows, data.notes):
        if row.nodeid in data.withheld:
            data.withheld.remove(row.nodeid)
    data.explorations[:] = [found for found in data.explorations if found.nodeid != item.nodeid]
    item.user_properties[:] = [p for p in item.user_properties if not str(p[0]).startswith(PROPERTY)]
    held.restart(item)
    unmeasured.restart(item)
