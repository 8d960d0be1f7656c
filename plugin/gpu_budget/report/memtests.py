"""What a row's memtest declares now: its budget and origin, and the control fixes it registers.

For rows of reports written before a row carried what FINDINGS.md needs of
its memtest: the memtest module is imported from the row's node id (relative
to the working directory), once per path.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from gpu_budget.declare.fixes import Control, Fix
from gpu_budget.declare.marks import gpu_budget as read_mark
from gpu_budget.declare.marks import merge as merge_marks
from gpu_budget.model.result import Result

_MEMTESTS: dict[str, ModuleType] = {}


@dataclass(frozen=True)
class Declared:
    """The budget a memtest declares for a scale and device, and where its figure comes from (marks.ORIGINS)."""

    origin: str | None
    budget: int | None


def memtest(path: str) -> ModuleType | None:
    """The memtest module at `path` (relative to the working directory), imported once; None when there is none."""
    if not Path(path).is_file():
        return None
    if path not in _MEMTESTS:
        folder = str(Path(path).resolve().parent)
        sys.path.insert(0, folder)  # memtests import their scenario modules by plain name
        try:
            spec = importlib.util.spec_from_file_location(f"_declared_{Path(path).stem}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        finally:
            sys.path.remove(folder)
        _MEMTESTS[path] = module
    return _MEMTESTS[path]


def declared(row: Result) -> Declared | None:
    """The budget and origin the row's memtest declares now, for its scale and device; None when it cannot be read.

    For rows of reports written before rows carried `budget_origin`.
    """
    path, _, rest = row.nodeid.partition("::")
    function = rest.split("::")[0].split("[")[0]
    module = memtest(path)
    if module is None:
        return None
    marks = [m for m in getattr(getattr(module, function, None), "pytestmark", []) if m.name == "gpu_budget"]
    if not marks:
        return None
    host = "cuda" if row.budget.vram else row.device or "cpu"
    mark = read_mark(**merge_marks([(m.args, m.kwargs) for m in reversed(marks)]), scale=row.scale, host=host,
                     where=row.nodeid)
    return Declared(mark.origin, mark.budget.vram or mark.budget.ram)


def registered(results: list[Result]) -> dict[str, Fix]:
    """The fixes the rows name, as the fix library and their memtests register them now: each row's memtest module
    is imported from its node id, as `declared` does. A fix of a report whose memtest is gone is left out."""
    from gpu_budget.declare import fixes

    for path in sorted({r.nodeid.partition("::")[0] for r in results if r.fixes}):
        memtest(path)
    found: dict[str, Fix] = {}
    for name in sorted({name for r in results for name in r.fixes}):
        try:
            found[name] = fixes.get(name)
        except fixes.FixError:
            continue
    return found


def controls(results: list[Result]) -> dict[str, Control]:
    """The control fixes among the rows' fixes (Fix.control)."""
    return {name: fix.control for name, fix in registered(results).items() if fix.control is not None}
