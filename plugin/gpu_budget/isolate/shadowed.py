"""Whether a package's modules come from a folder ahead of every site folder, so no environment can replace them.

An environment puts its own site folder first among the site folders, but the
folders ahead of them all stay ahead: the test files' folders pytest puts on
sys.path, a PYTHONPATH folder of modules. A package one of those holds (the
project's own checkout beside its tests) is imported from there whatever
release an environment installs, so a sweep of it would measure that copy at
every version under another version's name. Found without importing: the first
sys.path entry that holds the module, as the path finder would take it; an
editable install's folder comes after the site folders (its .pth appends it),
and a finder of its own is not a path entry, so neither counts.
"""

from __future__ import annotations

import sys
import sysconfig
from importlib import metadata
from importlib.machinery import PathFinder

from gpu_budget.declare.environment import canonical
from gpu_budget.isolate.environment import running_sites


def shadowing(package: str) -> str | None:
    """Where `package` (a canonical distribution name) is imported from ahead of every site folder; None where it is
    not (it comes from a site folder, or is not found)."""
    sites = set(running_sites())
    first_site = next((i for i, entry in enumerate(sys.path) if entry in sites), len(sys.path))
    for name in _top_level(package):
        for entry in sys.path[:first_site]:
            spec = PathFinder.find_spec(name, [entry or "."])
            if spec is not None and spec.loader is not None:  # a folder without __init__.py yields to a package later
                found = list(spec.submodule_search_locations or []) or [spec.origin]
                return str(found[0])
    return None


def standard_shadowed() -> list[str]:
    """The files ahead of the standard library on sys.path that hold a module of its name (a `re.py` beside the tests,
    a package's `__init__.py`): a process started with this path imports them in its place, so it crashes or hangs
    before any of its own code runs. A folder without `__init__.py` is a namespace portion (its spec's origin is
    None), which the standard library's own module still wins over."""
    stdlib = sysconfig.get_path("stdlib")
    ahead = sys.path[:next((i for i, entry in enumerate(sys.path) if entry == stdlib), len(sys.path))]
    found = []
    for entry in dict.fromkeys(ahead):
        for name in sorted(sys.stdlib_module_names):
            spec = PathFinder.find_spec(name, [entry or "."])
            if spec is not None and spec.origin not in (None, "built-in", "frozen") and \
                    not spec.origin.startswith(stdlib):
                found.append(spec.origin)
    return found


def _top_level(package: str) -> list[str]:
    """The import names of `package`: its installed distribution's top-level modules, else its name as a module."""
    try:
        dist = metadata.distribution(package)
    except metadata.PackageNotFoundError:
        return [canonical(package).replace("-", "_")]
    listed = (dist.read_text("top_level.txt") or "").split()
    from_files = {str(f).split("/")[0].removesuffix(".py") for f in dist.files or ()
                  if not str(f).startswith(("..", "/")) and ".dist-info" not in str(f).split("/")[0]
                  and "__pycache__" not in str(f) and str(f).split("/")[0].replace(".py", "").isidentifier()}
    return listed or sorted(from_files) or [canonical(package).replace("-", "_")]
