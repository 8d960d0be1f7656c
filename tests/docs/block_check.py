"""Run in a fresh Python by test_block_examples.py: import each docs example as the gate would, and check its markers.

Reads [{"where": ..., "source": ...}] as JSON on stdin and prints the problems found, as a JSON list of lines. Each
block runs as a module of its own (its Scenarios and Fixes built, its imports of the case studies made), then each
test function's gpu_budget markers are read as the session reads them, at every scale and on either device, and each
call of the fixture (`gpu_budget.measure(...)`) is held to the fixture's own signature. A plain Python, not the
pytest process: a block registers fixes and may import torch, which the test session must not share.
"""

from __future__ import annotations

import ast
import inspect
import json
import sys
import tempfile
import traceback
import types
from pathlib import Path

from gpu_budget.declare import marks
from gpu_budget.session.fixture import BudgetRun


def _first_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"


def _page_line(where: str, line: int) -> str:
    """`page:L` of a block that begins at `where` (`page:START`): its line `line` on the page."""
    page, start = where.rsplit(":", 1)
    return f"{page}:{int(start) + line - 1}"


def imported(where: str, source: str, folder: Path) -> tuple[dict, list[str]]:
    """The block's module namespace, run as a module named after the file its first line names (or the page)."""
    name = f"docs_block_{len(sys.modules)}"
    module = types.ModuleType(name)
    module.__file__ = str(folder / f"{name}.py")
    sys.modules[name] = module
    try:
        exec(compile(source, where, "exec"), module.__dict__)  # noqa: S102  the docs' own example, as pytest imports it
    except Exception as error:  # noqa: BLE001  every failure is the block's problem, reported with its line
        lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == where]
        at = _page_line(where, lines[-1]) if lines and lines[-1] else where
        return module.__dict__, [f"{at}: importing the block raised {_first_line(error)}"]
    return module.__dict__, []


def marker_problems(where: str, namespace: dict) -> list[str]:
    """Each test's gpu_budget markers read as the session reads them: merged, then at each scale on each host."""
    problems = []
    for name, value in namespace.items():
        found = [m for m in getattr(value, "pytestmark", []) if m.name == "gpu_budget"]
        if not (name.startswith("test") and callable(value) and found):
            continue
        try:
            merged = marks.merge([(m.args, m.kwargs) for m in reversed(found)], f"{where}::{name}")
            for scale in ("tiny", "real"):
                for host in ("cpu", "cuda"):
                    marks.gpu_budget(**merged, scale=scale, host=host, where=f"{where}::{name}")
        except Exception as error:  # noqa: BLE001  a refused marker is the block's problem (the error names the test)
            problems.append(f"its marker is refused: {_first_line(error)}")
    return problems


FIXTURE = {name: inspect.signature(getattr(BudgetRun, name)) for name in ("measure", "peak", "explore", "note")}


def fixture_call_problems(where: str, source: str) -> list[str]:
    """Calls of the fixture (`gpu_budget.measure(S, label=...)`) whose arguments its method would refuse."""
    problems = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "gpu_budget"
                and node.func.attr in FIXTURE):
            continue
        signature = FIXTURE[node.func.attr]
        args = [None] * len(node.args)  # self, then the positional arguments, then the keywords
        try:
            signature.bind(None, *args, **{k.arg: None for k in node.keywords if k.arg is not None})
        except TypeError as error:
            problems.append(f"{_page_line(where, node.lineno)}: gpu_budget.{node.func.attr}(): {error}")
    return problems


def check(blocks: list[dict]) -> list[str]:
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        for block in blocks:
            where, source = block["where"], block["source"]
            namespace, failed = imported(where, source, Path(folder))
            problems += failed or marker_problems(where, namespace)
            problems += fixture_call_problems(where, source)
    return problems


if __name__ == "__main__":
    print(json.dumps(check(json.load(sys.stdin))))
