"""Whether the measured children import the heavy libraries' compiled bytecode or compile their modules from source.

Compiling a module costs the compiler's memory and makes other objects than
unmarshalling its .pyc, so a child that compiles torch's and transformers'
modules (a uv environment installed without bytecode, on a host that sets
PYTHONDONTWRITEBYTECODE=1: nothing ever writes the .pyc) peaks elsewhere, and
runs several times slower, than one that loads them. The fingerprint records
which (fingerprint.py, "bytecode").

What is read, and why it is the reliable and cheap answer: the probe child
(a fresh child of the forkserver) checks, for each module of the libraries
(fingerprint.LIBRARY_PACKAGES) it holds from the forkserver's preload, the
.pyc the import system would read (`importlib.util.cache_from_source`, so
PYTHONPYCACHEPREFIX is honoured) the way the import system validates it: the
magic number, then the source's mtime and size stored in its header (or the
source's hash, for a checked hash-based .pyc). A .pyc that passes is one the
import would use. After the forkserver's imports the files on disk are the
truth whatever the cause: a host that may write bytecode has written it by
then, one that may not (sys.dont_write_bytecode, a read-only install) has
not. `sys.dont_write_bytecode` alone would say nothing of an install that
compiled its bytecode (pip does, at install), and a timing would be noise.
Where the forkserver preloads none of the libraries (a torch-free preload),
each installed library's `__init__.py` is checked instead, found without
importing it: what a child's first import of it reads. That costs one
header read per module (about 800 modules for torch and transformers), once
per session.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any

# the field's values: every module checked loads its .pyc / none does / some do (a part was compiled, or edited)
CACHED, SOURCE, MIXED = "cached", "source", "mixed"
# the share of the modules with a usable .pyc at or above which the field reads "cached", at or below which "source":
# a few edited files of a library installed for development do not make it "mixed"
CACHED_SHARE, SOURCE_SHARE = 0.9, 0.1


def usable_pyc(source: str) -> bool:
    """Whether the import system would load `source`'s cached .pyc rather than compile it."""
    try:
        cached = importlib.util.cache_from_source(source)
    except (NotImplementedError, ValueError):  # an implementation without a cache tag: it always compiles
        return False
    try:
        with open(cached, "rb") as fh:
            header = fh.read(16)
        st = os.stat(source)
    except OSError:
        return False
    if len(header) < 16 or header[:4] != importlib.util.MAGIC_NUMBER:
        return False
    flags = int.from_bytes(header[4:8], "little")
    if flags & 0b1:  # hash-based: used as is when unchecked, else when the source's hash matches
        if not flags & 0b10 or _hash_check() == "never":
            return True
        try:
            with open(source, "rb") as fh:
                return importlib.util.source_hash(fh.read()) == header[8:16]
        except OSError:
            return False
    return (int.from_bytes(header[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
            and int.from_bytes(header[12:16], "little") == st.st_size & 0xFFFFFFFF)


def _hash_check() -> str:
    try:
        import _imp

        return _imp.check_hash_based_pycs
    except (ImportError, AttributeError):
        return "default"


def library_sources(libraries: Iterable[str], modules: Mapping[str, Any] | None = None) -> list[str]:
    """The source files to check: those of the libraries' modules imported here, else each installed library's
    `__init__.py` (found, not imported)."""
    modules = sys.modules if modules is None else modules
    wanted = set(libraries)
    found = []
    for name, module in list(modules.items()):
        spec = getattr(module, "__spec__", None)
        origin = getattr(spec, "origin", None)
        if name.partition(".")[0] in wanted and isinstance(origin, str) and origin.endswith(".py"):
            found.append(origin)
    if found:
        return found
    for name in sorted(wanted):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and isinstance(spec.origin, str) and spec.origin.endswith(".py"):
            found.append(spec.origin)
    return found


def seen(libraries: Iterable[str], modules: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """{"bytecode": CACHED / SOURCE / MIXED, or None where no library is installed, "bytecode_seen": the detail}."""
    sources = library_sources(libraries, modules)
    if not sources:
        return {"bytecode": None, "bytecode_seen": None}
    usable = sum(usable_pyc(path) for path in sources)
    share = usable / len(sources)
    kind = CACHED if share >= CACHED_SHARE else SOURCE if share <= SOURCE_SHARE else MIXED
    writes = "off (sys.dont_write_bytecode: PYTHONDONTWRITEBYTECODE or -B)" if sys.dont_write_bytecode else "on"
    prefix = f"; cache prefix {sys.pycache_prefix}" if sys.pycache_prefix else ""
    return {"bytecode": kind,
            "bytecode_seen": f"{usable} of {len(sources)} modules with a usable .pyc; bytecode writes {writes}{prefix}"}
