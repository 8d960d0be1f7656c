"""A test's name as its baseline key holds it, without pytest-repeat's repetition id.

pytest-repeat (--count N, @pytest.mark.repeat(N)) runs a test N times as N
items, adding "<i>-<N>" to each one's parameters ("test_p[4-1-3]"). Every
repetition measures the same case: keyed by its own id, each one recorded an
entry of its own and none was ever judged against the test's entry, so a
repeated run passed as "no-baseline" (and failed under CI) whatever it measured.
The row keeps the item's node id; only the key drops the repetition.
"""

from __future__ import annotations

import re

import pytest

from gpu_budget.model.case_id import test_name

STEP = "__pytest_repeat_step_number"  # the parameter pytest-repeat adds, its value the repetition's index from 0


def case_name(item: pytest.Item) -> str:
    """The test's name in its file (case_id.test_name), pytest-repeat's "<i>-<N>" left out of its parameters."""
    name = test_name(item.nodeid)
    callspec = getattr(item, "callspec", None)
    if callspec is None or STEP not in callspec.params:
        return name
    mark = item.get_closest_marker("repeat")
    count = mark.args[0] if mark is not None and mark.args else item.config.getoption("count", None)
    step = f"{callspec.params[STEP] + 1}-{count}"
    ids = re.sub(rf"(?:^|-){re.escape(step)}(?=-|$)", "", callspec.id, count=1).lstrip("-")
    if ids == callspec.id:  # not the id pytest-repeat is known to give: the item's own name, as before
        return name
    head = name[: len(name) - len(callspec.id) - 2]  # the name without "[<callspec id>]"
    return f"{head}[{ids}]" if ids else head
