"""A side's run of the undecided cases only: a plugin each --against session loads (`-p`).

After one run per side, only the cases whose head figure falls where the tolerance cannot tell a change from
noise are measured again (verdict.undecided). Their sessions collect the user's whole selection as the first did (a
module that cannot be collected says so again) and this plugin deselects every test whose node id is not in the
file ONLY_ENV names, one per line. Without ONLY_ENV (the first pair, a session of the user's own) it does nothing.

At base, a node id given on the command line (`test_mem.py::test_new`) is given as its file (node_ids.py): a test
added since REF is not there, and pytest would fail the session on it. SELECT_ENV's file lists those node ids, one
per line as `<the file's absolute path>::<the rest>`; of each such file, the tests none of them names are deselected.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

ONLY_ENV = "GPU_BUDGET_AGAINST_ONLY"  # a file of the node ids this session runs; the rest are deselected
SELECT_ENV = "GPU_BUDGET_AGAINST_SELECT"  # a file of the node ids given as their file at base (above)
PLUGIN = "gpu_budget.against.narrow"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    target, chosen = os.environ.get(ONLY_ENV), os.environ.get(SELECT_ENV)
    wanted = {line for line in Path(target).read_text().splitlines() if line} if target else None
    named = _by_file(Path(chosen).read_text().splitlines()) if chosen else {}
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []  # one pass, in order: `not in kept` compared each with every kept item
    for item in items:
        (kept if (wanted is None or item.nodeid in wanted) and _named(item, named) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _by_file(lines: list[str]) -> dict[str, list[str]]:
    """`<absolute path>::<rest>` lines as path -> the rests naming tests in it."""
    out: dict[str, list[str]] = {}
    for line in filter(None, lines):
        path, _, rest = line.partition("::")
        out.setdefault(path, []).append(rest)
    return out


def _named(item: pytest.Item, named: dict[str, list[str]]) -> bool:
    """Whether the item's file is given whole, or a node id given names it as pytest reads one: the test itself, its
    parametrized ids (`test_fn` names `test_fn[a]`), or the class holding it."""
    rests = named.get(_resolved(item.path)) if named else None
    if rests is None:
        return True
    own = item.nodeid.partition("::")[2]
    return any(own == rest or own.startswith((f"{rest}::", f"{rest}[")) for rest in rests)


@functools.cache
def _resolved(path: Path) -> str:
    """A file's absolute path, resolved once per file: a collection holds many tests of each, and resolving is a
    system call per part of the path (20,000 items took seconds)."""
    return str(Path(path).resolve())
