"""The engine's inside stays typed and small: benchmarks/code_shape.py's counts within its LIMITS.

A planted regression of each kind (a `dict[str, Any]`, a string-keyed lookup,
a verdict compared with a string, a metric group outside model/metric.py, a
second MiB, a record read by key, an import circle, a long function) moves its
count: the counter can fail.
"""

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("code_shape", ROOT / "benchmarks" / "code_shape.py")
code_shape = importlib.util.module_from_spec(spec)
sys.modules["code_shape"] = code_shape
spec.loader.exec_module(code_shape)


def test_every_count_is_within_its_limit():
    found = code_shape.counts()
    over = {name: [str(h) for h in found[name]] for name, limit in code_shape.LIMITS.items() if len(found[name]) > limit}
    assert not over, over


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> dict:
    """The counts of a copy of the package with one of each regression planted."""
    root = tmp_path_factory.mktemp("pkg") / "gpu_budget"
    shutil.copytree(code_shape.PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    long_body = "\n".join(f"    x{i} = {i}" for i in range(code_shape.FUNCTION_LINES + 1))
    (root / "planted.py").write_text(
        "from dataclasses import dataclass\n"
        "from typing import Any\n"
        "from gpu_budget.report import planted_back\n"
        "@dataclass(frozen=True)\n"
        "class Keyed:\n"
        "    x: int\n"
        "    def __getitem__(self, key: str) -> int:\n"
        "        return self.x\n"
        "MiB = 2**20\n"
        "GROUP = ('ram', 'vram_allocated')\n"
        "def f(row: dict[str, Any], verdict: str) -> object:\n"
        "    return row['peaks'] if verdict == 'pass' else row.get('steps')\n"
        f"def g() -> None:\n{long_body}\n")
    (root / "report" / "planted_back.py").write_text("from gpu_budget import planted  # noqa\n")
    return {name: len(hits) for name, hits in code_shape.counts(root).items()}


@pytest.mark.parametrize(("name", "more"), [("dict[str, Any]", 1), ("Any", 1), ("string-keyed lookups", 2),
                                            ("verdict == str", 1), ("metric groups outside model/metric.py", 1),
                                            ("MiB definitions", 1), ("records read by key", 1), ("import circles", 1),
                                            ("long functions", 1)])
def test_a_planted_regression_moves_its_count(planted, name, more):
    assert planted[name] == len(code_shape.counts()[name]) + more
