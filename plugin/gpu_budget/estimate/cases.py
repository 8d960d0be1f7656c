"""What the estimate CLI estimates: the Scenarios it is given, as `path/to/module.py:NAME` or `module:NAME`.

Fixes follow after `+` (`memtests/s1_wav2vec2/scenarios.py:AS_REPORTED+truncate`)
and are checked like `Scenario.with_fixes` checks them. A path is imported the
way pytest imports a test module: the nearest folder above its package goes on
sys.path (so `memtests/` for a case study), and with it the package the
scenario's runner and builder live in, for this process and the children the
validation starts from it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from gpu_budget.declare.fixes import FixError
from gpu_budget.declare.scenario import Scenario

FORM = "'path/to/module.py:NAME' or 'module:NAME', fixes after '+' (scenarios.py:S1+truncate)"


class CaseError(ValueError):
    """A case spec that names no Scenario: the message names the spec and what is wrong with it."""


def load_case(spec: str) -> Scenario:
    """'where:NAME+fix+fix' -> the Scenario NAME of module `where` with those fixes added."""
    target, *fixes = spec.split("+")
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name.isidentifier():
        raise CaseError(f"bad case {spec!r}: expected {FORM}")
    module = _import(where, spec)
    scenario = getattr(module, name, None)
    if not isinstance(scenario, Scenario):
        found = sorted(k for k, v in vars(module).items() if isinstance(v, Scenario))
        what = "no" if scenario is None else f"a {type(scenario).__name__}, not a Scenario, as"
        raise CaseError(f"case {spec!r}: {where} has {what} {name!r} (its Scenarios: {', '.join(found) or 'none'})")
    try:
        return scenario.with_fixes(*fixes) if fixes else scenario
    except FixError as exc:
        raise CaseError(f"case {spec!r}: {exc}") from None


def source(spec: str) -> str | None:
    """The file of the module a loaded case's spec names (None where it has none): what an output must not replace."""
    where = spec.split("+")[0].rpartition(":")[0]
    if where.endswith(".py") or "/" in where:
        return str(Path(where).resolve())
    return getattr(sys.modules.get(where), "__file__", None)


def _import(where: str, spec: str) -> ModuleType:
    if where.endswith(".py") or "/" in where:
        return _import_path(Path(where), spec)
    try:
        return _imported(where, where, spec)
    except ModuleNotFoundError as exc:
        raise CaseError(f"case {spec!r}: no module {exc.name!r} on sys.path (give a path instead, "
                        f"e.g. memtests/s1_wav2vec2/scenarios.py:S1)") from None


def _imported(name: str, where: str | Path, spec: str) -> ModuleType:
    """The module imported; the case's own error where its code fails (a syntax error, its own exception, a package
    it imports not installed), named with the spec: a ModuleNotFoundError is raised only for `name` itself (or a
    package above it), for the caller to say."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            raise
        raise CaseError(f"case {spec!r}: importing {where} failed: {type(exc).__name__}: {exc}") from None
    except Exception as exc:  # noqa: BLE001  the user's module: its error, not ours
        raise CaseError(f"case {spec!r}: importing {where} failed: {type(exc).__name__}: {exc}") from None


def _import_path(path: Path, spec: str) -> ModuleType:
    """Import a file by its dotted name under the first folder above it that is not a package."""
    path = path.resolve()
    if path.suffix != ".py" or not path.is_file():
        raise CaseError(f"case {spec!r}: {path} is not a Python file")
    parts = [] if path.stem == "__init__" else [path.stem]
    root = path.parent
    while (root / "__init__.py").is_file():
        parts.insert(0, root.name)
        root = root.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    name = ".".join(parts)
    module = _imported(name, path, spec)
    found = getattr(module, "__file__", None)
    if found is None or Path(found).resolve() == path:
        return module
    # that import name is another file's in this run (another case's folder imported first, or earlier on sys.path)
    if len(parts) > 1:  # its siblings import by the package's name, which is the other file's: it cannot be its own
        raise CaseError(f"case {spec!r}: {path} imports as {name!r}, which this run imported from {found}: one Python "
                        "holds one package of a name; estimate the two in separate runs")
    return _own_module(name, path, spec)


def _own_module(name: str, path: Path, spec: str) -> ModuleType:
    """A top-level module file read under an import name of its own, where `name` is another file's in this run."""
    own = f"_gpu_budget_case_{name}_{abs(hash(str(path))):x}"
    if own in sys.modules:
        return sys.modules[own]
    loaded = importlib.util.spec_from_file_location(own, path)
    module = importlib.util.module_from_spec(loaded)
    sys.modules[own] = module
    try:
        loaded.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001  the user's module: its error, not ours
        del sys.modules[own]
        raise CaseError(f"case {spec!r}: importing {path} failed: {type(exc).__name__}: {exc}") from None
    return module
