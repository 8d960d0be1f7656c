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

from gpu_budget.declare.marks import PROBE, Given, refuse_params_at_odds
from gpu_budget.judge import keys
from gpu_budget.model.case_id import SEPARATOR, CaseId
from gpu_budget.model.result import Result
from gpu_budget.session import param_ids
from gpu_budget.session.data import SessionData
from gpu_budget.session.options import Options
from gpu_budget.session.repeats import case_name

MARKER = "gpu_budget"
PYTESTMARK = "pytestmark"  # the attribute pytest keeps a module's, class's or function's marks in
NOT_ENABLED = "memory-budget test: run with --gpu-budget"
NOT_PROBING = "an unjudged probe (no verdict): run with --gpu-budget-probes"


def is_budget_test(item: pytest.Item) -> bool:
    return item.get_closest_marker(MARKER) is not None or MARKER in getattr(item, "fixturenames", ())


def note_collected(config: pytest.Config, items: list[pytest.Item], data: SessionData, options: Options) -> None:
    """Note the budget tests among `items` and whether the selection is narrowed, and skip those this session does not
    run. Each was noted as collected as pytest collected it (note_item), before any pytest_collection_modifyitems;
    an item a hook added since is noted here."""
    _note_budget_tests(items, data, options)
    data.narrowed |= narrowed(config, items)
    param_ids.note_shared(items)


def note_marked_late(items: list[pytest.Item], data: SessionData, options: Options) -> None:
    """Note the tests another pytest_collection_modifyitems made budget tests after note_collected ran (a conftest's
    hook adding the gpu_budget marker): skipped without --gpu-budget as the others are, and named where they fail
    without a row. Their rows follow those of the tests noted before."""
    noted = set(data.order)
    _note_budget_tests([item for item in items if item.nodeid not in noted], data, options)


def _note_budget_tests(items: list[pytest.Item], data: SessionData, options: Options) -> None:
    """Note each budget test; one that measures through the fixture alone gets a bare gpu_budget marker (no budget:
    merged, it adds nothing), before pytest's -m deselects, so `-m gpu_budget` selects it and `-m "not gpu_budget"`
    does not."""
    skip, probing = pytest.mark.skip(reason=NOT_ENABLED), pytest.mark.skip(reason=NOT_PROBING)
    for item in items:
        if not is_budget_test(item):
            continue
        if item.get_closest_marker(MARKER) is None:
            item.add_marker(MARKER)
        _note(item, data)
        data.order.append(item.nodeid)
        if not options.enabled:
            item.add_marker(skip)
        elif item.get_closest_marker(PROBE) is not None and not options.probes:
            item.add_marker(probing)


def note_item(item: pytest.Item, data: SessionData) -> None:
    """Note a budget test as collected as pytest collects it (pytest_itemcollected): before any
    pytest_collection_modifyitems, whatever its order. One that drops items itself (a conftest's items[:] = ..., which
    calls no pytest_deselected), even a conftest's tryfirst one, which runs before the gate's, drops no deleted test
    whose entries an update prunes."""
    if is_budget_test(item):
        _note(item, data)


def note_measuring(item: pytest.Item, data: SessionData) -> None:
    """Note a test that measures as collected, however it asked for the fixture: one that asks while it runs
    (request.getfixturevalue) carried neither the marker nor the fixture at collection, and an update pruned the entry
    it had just recorded as that of a test no longer collected."""
    _note(item, data)


def _note(item: pytest.Item, data: SessionData) -> None:
    """The test's file as collected, and its name in a key: its classes and its parameters (a parameter removed is a
    test deleted)."""
    module = data.files.setdefault(item.nodeid, str(Path(str(item.path))))
    data.collected[module].add(case_name(item))


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


def narrowed(config: pytest.Config, items: list[pytest.Item]) -> bool:
    """Whether the selection names node ids, keywords or a mark expression, or reruns the last failed tests: baselines
    are then not pruned. --lf leaves the tests that passed out of a module's collection itself, deselecting none."""
    return any("::" in arg for arg in config.args) or bool(config.getoption("keyword") or config.getoption("markexpr")
                                                           or reruns_failed(config, items))


def reruns_failed(config: pytest.Config, items: list[pytest.Item]) -> bool:
    """Whether --lf narrows this run: pytest reruns only the failed tests where one of them is among the collected
    items; with none recorded (or none of them collected) it runs the whole suite, which an update then prunes as one
    (before, `--lf` on an empty cache ran every test yet kept the entries of deleted ones for good). Read from pytest's
    own last-failed plugin, as its pytest_collection_modifyitems (run after this one) will read it."""
    if not config.getoption("lf", False):
        return False
    plugin = config.pluginmanager.get_plugin("lfplugin")
    failed = getattr(plugin, "lastfailed", None)
    if failed is None:  # no last-failed plugin to read (-p no:cacheprovider): --lf cannot narrow
        return False
    known = {str(nodeid) for nodeid in failed}
    return any(item.nodeid in known for item in items)


def note_selected(items: list[pytest.Item], data: SessionData) -> None:
    """The budget tests left to run once deselection is done: their count (the fail-safe's) and node ids (a stop at a
    failure names those it left unrun)."""
    data.chosen = [item.nodeid for item in items if is_budget_test(item)]
    data.selected = len(data.chosen)


def note_deselected(items: list[pytest.Item], data: SessionData) -> None:
    """Note the budget tests deselected (-k, -m, --deselect, another plugin's deselection) as collected: each exists,
    so its entry is never among those an update of a selection names as no longer measured (whole_scopes)."""
    data.narrowed |= bool(items)
    for item in items:
        if is_budget_test(item):
            data.collected[str(Path(str(item.path)))].add(case_name(item))


WHOLE = ""  # a scope of whole_scopes: the whole module


def whole_scopes(config: pytest.Config, modules: list[str]) -> dict[str, frozenset[str]]:
    """The modules of `modules` (test files as collected) whose tests this session collected whole, each with the
    tests so collected: WHOLE for the module (a path or -k selection collects every test of it, deselecting some),
    else the test names a node id without parameters names ("test_x", "TestC.test_x", "TestC": every id of it). A
    node id of one parametrize id ("test_x[bs8]") collects that id alone, and --lf leaves the tests that passed out
    of a module's collection itself: their siblings are not known gone, so not named (none at all under --lf)."""
    if config.getoption("lf", False):
        return {}
    here, named, paths = Path(config.invocation_params.dir), {}, []
    for arg in config.args:
        path, sep, rest = arg.partition(SEPARATOR)
        if not sep:
            paths.append((here / path).resolve())
            continue
        name, bracket, _ = rest.partition("[")
        names = named.setdefault((here / path).resolve(), set())  # a module a node id narrows
        if not bracket:
            names.add(name.replace(SEPARATOR, "."))
    out = {}
    for module in modules:
        resolved = Path(module).resolve()
        scopes = named.get(resolved)
        if scopes is None or any(resolved.is_relative_to(path) for path in paths):
            out[module] = frozenset({WHOLE})
        elif scopes:
            out[module] = frozenset(scopes)
    return out


def markers_outermost_first(item: pytest.Item) -> list[tuple[tuple[Given, ...], dict[str, Given]]]:
    """The item's gpu_budget markers as (args, kwargs), each overriding those before it: module, class, function, then
    parametrize marks. pytest lists a node's own marks closest first (the decorator nearest the def, as
    get_closest_marker and report/memtests.py read it), so each node's are taken in reverse; the parametrize marks it
    lists after the function's are the closest of all, so they come last; params at odds are refused
    (marks.refuse_params_at_odds)."""
    params = [mark for mark in getattr(getattr(item, "callspec", None), "marks", ()) if mark.name == MARKER]
    by_node: list[tuple[pytest.Item, list[pytest.Mark]]] = []
    for node, mark in item.iter_markers_with_node(MARKER):  # closest node first; a node's marks closest first
        if node is item and any(mark is param for param in params):
            continue
        if not by_node or by_node[-1][0] is not node:
            by_node.append((node, []))
        by_node[-1][1].append(mark)
    refuse_params_at_odds([(mark.args, mark.kwargs) for mark in params], item.nodeid)
    ordered = [mark for node, node_marks in reversed(by_node) for mark in _outermost_first(node, node_marks)] + params
    return [(mark.args, mark.kwargs) for mark in ordered]


def _outermost_first(node: pytest.Item | pytest.Collector, marks: list[pytest.Mark]) -> list[pytest.Mark]:
    """A node's marks (closest first, as pytest lists them) outermost first. A class's list holds its base classes'
    marks before its own (pytest reads its MRO reversed), so each class's are taken in turn, base classes first: a
    subclass's marker overrides its base's, as the test's overrides its class's; a mark no class holds (added by a
    hook) stays the farthest, as add_marker appends it."""
    classes = reversed(node.obj.__mro__) if isinstance(node, pytest.Class) else ()
    held = [getattr(m, "mark", m) for cls in classes for m in reversed(_own_marks(cls))]
    rank = {id(mark): at for at, mark in enumerate(held)}
    ordered = marks[::-1]
    ordered.sort(key=lambda mark: rank.get(id(mark), -1))  # stable: a class's own marks keep their order
    return ordered


def _own_marks(cls: type) -> list:
    """The marks a class itself holds (its own PYTESTMARK, not one it inherits), closest first."""
    own = vars(cls).get(PYTESTMARK, [])
    return own if isinstance(own, list) else [own]
