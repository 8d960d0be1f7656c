"""Which collected items are budget tests, what the session notes of them, and their markers in order.

A budget test carries the gpu_budget marker or uses the gpu_budget fixture.
Without --gpu-budget each is skipped (named as such); an unjudged probe is
skipped unless --gpu-budget-probes. The session keeps the test names per
module, parameters included (baseline pruning) and the node ids in order (the rows' order); at the end, the
cases of the tests that ran to their end (a label such a test no longer measures is pruned too).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_budget.declare.marks import PROBE, Given
from gpu_budget.judge import keys
from gpu_budget.model.case_id import CaseId
from gpu_budget.model.result import Result
from gpu_budget.session import param_ids
from gpu_budget.session.data import SessionData
from gpu_budget.session.options import Options
from gpu_budget.session.repeats import case_name

MARKER = "gpu_budget"
NOT_ENABLED = "memory-budget test: run with --gpu-budget"
NOT_PROBING = "an unjudged probe (no verdict): run with --gpu-budget-probes"


def is_budget_test(item: pytest.Item) -> bool:
    return item.get_closest_marker(MARKER) is not None or MARKER in getattr(item, "fixturenames", ())


def note_collected(config: pytest.Config, items: list[pytest.Item], data: SessionData, options: Options) -> None:
    """Note the budget tests among `items` and whether the selection is narrowed, and skip those this session does not
    run. Called before any other pytest_collection_modifyitems: one that drops items itself (a conftest's items[:] =
    ...) calls no pytest_deselected, and a test it drops is no deleted test whose entries an update prunes."""
    skip, probing = pytest.mark.skip(reason=NOT_ENABLED), pytest.mark.skip(reason=NOT_PROBING)
    for item in items:
        if not is_budget_test(item):
            continue
        # the test's name in a key: its classes and its parameters (a parameter removed is a test deleted)
        module = data.files[item.nodeid] = str(Path(str(item.path)))
        data.collected[module].add(case_name(item))
        data.order.append(item.nodeid)
        if not options.enabled:
            item.add_marker(skip)
        elif item.get_closest_marker(PROBE) is not None and not options.probes:
            item.add_marker(probing)
    data.narrowed |= narrowed(config)
    param_ids.note_shared(items)


def finished_cases(rows: list[Result], rootdir: Path, baselines: Path | None = None,
                   files: dict[str, str] | None = None) -> list[CaseId]:
    """The cases measured by tests that ran to their end: every row of the test says pytest passed it. A test that
    failed or was skipped may have stopped before some of its labels, so it names none (its entries are kept).
    `files`: each test's file as collected (SessionData.files), where its node id is no path from the rootdir."""
    outcomes: dict[str, set[str | None]] = {}
    for row in rows:
        outcomes.setdefault(row.test_nodeid, set()).add(row.test_outcome)
    return [keys.row_case(row.nodeid, row.label, rootdir, baselines, (files or {}).get(row.test_nodeid)) for row in rows
            if outcomes[row.test_nodeid] == {"passed"}]


def narrowed(config: pytest.Config) -> bool:
    """Whether the selection names node ids, keywords or a mark expression, or reruns the last failed tests: baselines
    are then not pruned. --lf leaves the tests that passed out of a module's collection itself, deselecting none."""
    return any("::" in arg for arg in config.args) or bool(config.getoption("keyword") or config.getoption("markexpr")
                                                           or config.getoption("lf", False))


def markers_outermost_first(item: pytest.Item) -> list[tuple[tuple[Given, ...], dict[str, Given]]]:
    """The item's gpu_budget markers as (args, kwargs), each overriding those before it: module, class, function, then
    parametrize marks. pytest lists a node's own marks closest first (the decorator nearest the def, as
    get_closest_marker and report/memtests.py read it), so each node's are taken in reverse; the parametrize marks it
    lists after the function's are the closest of all, so they come last."""
    params = [mark for mark in getattr(getattr(item, "callspec", None), "marks", ()) if mark.name == MARKER]
    by_node: list[tuple[pytest.Item, list[pytest.Mark]]] = []
    for node, mark in item.iter_markers_with_node(MARKER):  # closest node first; a node's marks closest first
        if node is item and any(mark is param for param in params):
            continue
        if not by_node or by_node[-1][0] is not node:
            by_node.append((node, []))
        by_node[-1][1].append(mark)
    ordered = [mark for _, node_marks in reversed(by_node) for mark in reversed(node_marks)] + params
    return [(mark.args, mark.kwargs) for mark in ordered]
