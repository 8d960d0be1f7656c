"""The plugin runs on the oldest Python pyproject.toml declares (requires-python >= 3.10): no module imports, at run
time, a name of `typing` that Python 3.10 lacks. `from typing import Self` in declare/fix_reads.py once failed every
function case's measured child there: "cannot import name 'Self' from 'typing'"."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugin" / "gpu_budget"
# typing's names added after 3.10: 3.11, 3.12, 3.13
NEWER = {"Self", "LiteralString", "Never", "assert_never", "assert_type", "reveal_type", "TypeVarTuple", "Unpack",
         "Required", "NotRequired", "dataclass_transform", "get_overloads", "clear_overloads", "override",
         "TypeAliasType", "get_protocol_members", "is_protocol", "ReadOnly", "TypeIs", "NoDefault"}


def _checking_only(tree: ast.Module) -> set[int]:
    """Line numbers of statements under `if TYPE_CHECKING:` (never run)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def test_the_declared_python_floor_is_3_10():
    said = re.search(r'requires-python = ">=(3\.\d+)"', (ROOT / "pyproject.toml").read_text())
    assert said and said.group(1) == "3.10"  # the names above are those 3.10 lacks


def test_no_module_imports_a_typing_name_python_3_10_lacks():
    found = []
    for path in sorted(PLUGIN.rglob("*.py")):
        tree = ast.parse(path.read_text())
        skipped = _checking_only(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "typing" and node.lineno not in skipped:
                found += [f"{path.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names if a.name in NEWER]
            elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "typing"
                  and node.attr in NEWER and node.lineno not in skipped):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} typing.{node.attr}")
    assert not found, found
