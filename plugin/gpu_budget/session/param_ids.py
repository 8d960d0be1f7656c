"""A Scenario parameter's id: its name and fixes ("big+lora"), and the tests whose Scenarios share one.

The id is part of a case's baseline key, so a reordered list keeps each
scenario's own entry. Two different Scenarios of one name and fixes (the same
scenario at two batch sizes) get one id, which pytest numbers by place
("alloc0", "alloc1"): reordering that list judged each against the other's
entry. Such tests are refused, naming the fix; ids= of their own (or
pytest.param(id=...)) are never numbered so.
"""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from gpu_budget.declare.scenario import Scenario
from gpu_budget.session.refusal import gate_frames, refuse

SHARED = pytest.StashKey[str]()  # why the item's Scenario parameter cannot key its baseline


def scenario_id(scenario: Scenario) -> str:
    return "+".join((scenario.name, *scenario.fixes))


def note_shared(items: list[pytest.Item]) -> None:
    """Mark the items whose Scenario parameter shares its id with a different Scenario of the same test and was
    numbered by pytest (its own id, not given by ids=)."""
    groups: dict[tuple[str, str, str, str], list[tuple[pytest.Item, Scenario]]] = defaultdict(list)
    for item in items:
        callspec = getattr(item, "callspec", None)
        for argname, value in (callspec.params.items() if callspec is not None else ()):
            if isinstance(value, Scenario):
                key = (item.parent.nodeid, getattr(item, "originalname", item.name), argname, scenario_id(value))
                groups[key].append((item, value))
    for (_, _, argname, shared), members in groups.items():
        numbered = [(item, value) for item, value in members if _numbered(item.callspec.id, shared)]
        distinct = [value for i, (_, value) in enumerate(numbered) if value not in [v for _, v in numbered[:i]]]
        if len(distinct) < 2:  # one Scenario listed twice: numbered, but either number holds the same case
            continue
        ids = ", ".join(_numbered(item.callspec.id, shared) for item, _ in numbered)
        why = (f"parameter {argname!r}: {len(distinct)} different Scenarios share the id {shared!r} (their name and "
               f"fixes), so pytest numbers them by their place ({ids}): reordering the list would judge each against "
               "another's baseline; give each a name of its own (Scenario(name=...)), or ids=")
        for item, _ in numbered:
            item.stash[SHARED] = why


def _numbered(callspec_id: str, shared: str) -> str:
    """The id pytest numbered from `shared` ("alloc0", "alloc_1") within a test's id, or ""."""
    found = re.search(rf"(?:^|-)({re.escape(shared)}_?\d+)(?:-|$)", callspec_id)
    return found.group(1) if found else ""


def refuse_shared(item: pytest.Item) -> None:
    """Fail a measure() of such an item, naming why and the fix."""
    __tracebackhide__ = gate_frames
    why = item.stash.get(SHARED, None)
    if why:
        refuse(f"{item.nodeid}: {why}")
