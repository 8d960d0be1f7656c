"""How typed and how small the engine's inside is: the counts issue "One model of the data" set limits on.

Counted in plugin/gpu_budget by reading its source (ast and tokenize), so the
test that keeps them (tests/unit/test_code_shape.py) and a reader get the same
figures:

- ``dict[str, Any]`` written anywhere, and ``Mapping[str, Any]`` beside it (a
  count met by renaming one into the other is not met: both are reported);
- ``Any`` names (the ``typing`` import lines left out);
- string-keyed lookups (``x["peaks"]``, ``x.get("peaks")``) outside the code
  that (de)serialises: a ``to_json`` / ``from_json`` body, and the modules
  whose job is bytes (SERIALISING). An ALL_CAPS key is an environment
  variable's name, not a figure's, and a subscripted type
  (``StashKey["BudgetSession"]``) is a forward reference: neither is counted;
- comparisons of a verdict with a string (``verdict == "pass"``);
- the definitions that must be single: ``Metric`` and its groups (no tuple of
  metrics written outside model/metric.py), ``MiB``;
- records read by key (a dataclass with a Mapping base or a ``__getitem__``);
- import circles between the package's modules (function-level imports too);
- classes over CLASS_LINES lines and functions over FUNCTION_LINES lines.

Run ``python benchmarks/code_shape.py`` for the counts and where they are.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "plugin" / "gpu_budget"
SERIALISING = ("isolate/remote.py", "isolate/events.py", "isolate/wire.py", "report/json_report.py",
               "judge/files.py", "judge/store.py", "session/data.py")
SERIALISING_FUNCTIONS = ("to_json", "from_json", "_json", "_row_fields", "_from_row")
METRIC_HOME = "model/metric.py"
METRIC_NAMES = {"ram", "ram_tensor", "ram_tree", "vram_allocated", "vram_reserved", "vram_device", "vram_tree"}
CLASS_LINES = 200
FUNCTION_LINES = 50
LIMITS = {"modules that do not parse": 0, "dict[str, Any]": 30, "Any": 100, "string-keyed lookups": 10, "verdict == str": 0,
          "metric groups outside model/metric.py": 0, "Metric definitions": 1, "MiB definitions": 1, "records read by key": 0, "import circles": 0, "long classes": 0, "long functions": 0}


@dataclass(frozen=True)
class Hit:
    """One counted place: the module (relative to the package) and the line."""

    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def modules(root: Path = PACKAGE) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*.py"))}


def unparsable(sources: dict[str, str]) -> list[Hit]:
    """Modules that do not parse: counted nowhere else, so they are a count of their own."""
    hits = []
    for path, text in sources.items():
        try:
            ast.parse(text)
        except SyntaxError as exc:
            hits.append(Hit(path, exc.lineno or 0, str(exc)))
    return hits


def _text_hits(sources: dict[str, str], pattern: str) -> list[Hit]:
    rx = re.compile(pattern)
    return [Hit(path, n, line.strip()) for path, text in sources.items()
            for n, line in enumerate(text.splitlines(), 1) if rx.search(line)]


def any_names(sources: dict[str, str]) -> list[Hit]:
    hits = []
    for path, text in sources.items():
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME and tok.string == "Any" and not tok.line.lstrip().startswith(("from ", "import ")):
                hits.append(Hit(path, tok.start[0], tok.line.strip()))
    return hits


def _key(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and not node.value.isupper():
        return node.value
    return None


def _is_type(node: ast.AST) -> bool:
    """A subscripted type (`StashKey["Session"]`, `Callable["..."]`): a forward reference, not a lookup."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return name[:1].isupper()


def string_lookups(sources: dict[str, str]) -> list[Hit]:
    hits = []
    for path, text in sources.items():
        if path in SERIALISING:
            continue
        skip: set[int] = set()
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in SERIALISING_FUNCTIONS:
                skip.update(id(n) for n in ast.walk(node))
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            key = None
            if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Store) and not _is_type(node.value):
                key = _key(node.slice)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                  and node.args):
                key = _key(node.args[0])
            if key is not None:
                hits.append(Hit(path, node.lineno, f"[{key!r}]"))
    return hits


def _metric_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and node.value in METRIC_NAMES:
        return node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("Metric", "M") \
            and node.attr.lower() in METRIC_NAMES:
        return node.attr.lower()
    return None


def metric_groups(sources: dict[str, str]) -> list[Hit]:
    """Tuples, lists and sets of two or more metrics (names or Metric members) written outside METRIC_HOME."""
    hits = []
    for path, text in sources.items():
        if path == METRIC_HOME:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2:
                names = [_metric_name(e) for e in node.elts]
                if all(names) and any(n.startswith("vram") for n in names):
                    hits.append(Hit(path, node.lineno, ", ".join(names)))
    return hits


def definitions(sources: dict[str, str], name: str) -> list[Hit]:
    """Where `name` is bound at a module's top level or defined as a class."""
    hits = []
    for path, text in sources.items():
        for node in ast.parse(text).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if name in bound or (isinstance(node, ast.ClassDef) and node.name == name):
                hits.append(Hit(path, node.lineno, name))
    return hits


def _module_name(path: str) -> str:
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["gpu_budget", *parts])


def import_circles(sources: dict[str, str]) -> list[Hit]:
    names = {_module_name(p): p for p in sources}
    graph: dict[str, set[str]] = {m: set() for m in names}
    for path, text in sources.items():
        here = _module_name(path)
        package = here if path.endswith("__init__.py") else here.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(text)):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in names else base for a in node.names]
            for target in targets:
                if target in names and target != here:
                    graph[here].add(target)
    return [Hit(names[c[0]], 1, " -> ".join(c)) for c in _cycles(graph)]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def keyed_records(sources: dict[str, str]) -> list[Hit]:
    """Records (dataclasses, and the classes their bases name) read by key: a Mapping base or a __getitem__."""
    trees = {path: ast.parse(text) for path, text in sources.items()}
    classes = {node.name: node for tree in trees.values() for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}

    def keyed(node: ast.ClassDef, seen: frozenset[str] = frozenset()) -> bool:
        names = {b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in node.bases}
        if "Mapping" in names or any(isinstance(f, ast.FunctionDef) and f.name == "__getitem__" for f in node.body):
            return True
        return any(keyed(classes[n], seen | {node.name}) for n in names if n in classes and n not in seen)

    def is_record(node: ast.ClassDef) -> bool:
        return any("dataclass" in ast.unparse(d) for d in node.decorator_list)

    return [Hit(path, node.lineno, node.name) for path, tree in trees.items() for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and is_record(node) and keyed(node)]


def long_defs(sources: dict[str, str], kind: type, limit: int) -> list[Hit]:
    hits = []
    for path, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, kind):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    hits.append(Hit(path, node.lineno, f"{node.name}: {lines} lines"))
    return hits


def counts(root: Path = PACKAGE) -> dict[str, list[Hit]]:
    every = modules(root)
    broken = unparsable(every)
    sources = {path: text for path, text in every.items() if path not in {h.path for h in broken}}
    return {
        "modules that do not parse": broken,
        "dict[str, Any]": _text_hits(sources, r"\bdict\[str, Any\]"),
        "Mapping[str, Any]": _text_hits(sources, r"\bMapping\[str, Any\]"),
        "Any": any_names(sources),
        "string-keyed lookups": string_lookups(sources),
        "verdict == str": _text_hits(sources, r"verdict\s*[!=]=\s*[\"']|[\"']\s*[!=]=\s*\w*\.?verdict\b"),
        "metric groups outside model/metric.py": metric_groups(sources),
        "Metric definitions": definitions(sources, "Metric"),
        "MiB definitions": definitions(sources, "MiB"),
        "records read by key": keyed_records(sources),
        "import circles": import_circles(sources),
        "long classes": long_defs(sources, ast.ClassDef, CLASS_LINES),
        "long functions": long_defs(sources, (ast.FunctionDef, ast.AsyncFunctionDef), FUNCTION_LINES),
    }


def main() -> int:
    found = counts()
    verbose = "-v" in sys.argv
    over = 0
    for name, hits in found.items():
        limit = LIMITS.get(name)
        mark = "" if limit is None else f" (limit {limit})" + (" OVER" if len(hits) > limit else "")
        over += limit is not None and len(hits) > limit
        print(f"{name:40} {len(hits):5}{mark}")
        if verbose or (limit is not None and len(hits) > limit and len(hits) <= 60):
            by_file = Counter(h.path for h in hits)
            print("    " + ", ".join(f"{p} {n}" for p, n in by_file.most_common()))
            if len(hits) <= 12 or verbose:
                for hit in hits:
                    print(f"      {hit}")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
