"""The facts of the host and of the measured children's setup that a baseline's fingerprint records.

The parent reads the host's (`host_facts`: the CPU, the kernel, glibc, transparent huge pages, the allocator's
environment, the threads and the kernel-dispatch pin); the probe child, a fresh child of the forkserver, reads what
only such a child sees (`child_facts`: the import floor it starts at, the kernels' capability, the packages imported,
whether the libraries' modules come from their bytecode); `collect` joins them with the probe's device into the
session's fingerprint, and `hardware_key` names the folder its baselines live in. What a difference in any of them
means is judge/fingerprint.py's policy.

Bytecode: compiling a module costs the compiler's memory and makes other objects than unmarshalling its .pyc, so a
child that compiles the libraries' modules (an environment installed without bytecode, on a host that sets
PYTHONDONTWRITEBYTECODE=1) peaks elsewhere, and runs several times slower, than one that loads them. The probe child
checks, for each module of the libraries (LIBRARY_PACKAGES) it holds from the forkserver's preload, the .pyc the
import system would read (`importlib.util.cache_from_source`, so PYTHONPYCACHEPREFIX is honoured) the way the import
system validates it: the magic number, then the source's mtime and size in its header (or the source's hash, for a
checked hash-based .pyc). After the forkserver's imports the files on disk are the truth whatever the cause: a host
that may write bytecode has written it by then, one that may not has not. Where the forkserver preloads none of the
libraries, each installed library's `__init__.py` is checked instead, found without importing it. That costs one
header read per module (about 800 for torch and transformers), once per session.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import platform
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType

from gpu_budget.measure.device import DeviceInfo
from gpu_budget.measure.procfs import status
from gpu_budget.model.setup import Fact, Fingerprint

LIBRARY_PACKAGES = ("torch", "transformers", "peft", "accelerate", "bitsandbytes", "funasr")
NOT_IMPORTED = "(not-imported)"  # no space: the preload list is split on whitespace

# the bytecode field's values: every module checked loads its .pyc / none does / some do (a part compiled, or edited)
CACHED, SOURCE, MIXED = "cached", "source", "mixed"
# the share of the modules with a usable .pyc at or above which the field reads "cached", at or below which "source":
# a few edited files of a library installed for development do not make it "mixed"
CACHED_SHARE, SOURCE_SHARE = 0.9, 0.1

# Environment variables that change how the children allocate host memory
_ALLOCATOR_ENV = re.compile(r"^(MALLOC_.*|GLIBC_TUNABLES|LD_PRELOAD|JEMALLOC_.*|TCMALLOC_.*|THP_MEM_ALLOC_ENABLE)$")
# x86-64 micro-architecture levels (psABI): the flags /proc/cpuinfo shows for each
_X86_LEVELS = (
    ("x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}),
    ("x86-64-v3", {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe", "xsave"}),
    ("x86-64-v2", {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"}),
)


@dataclass(frozen=True)
class Probed:
    """What the probe child reported (forkserver.probe): its device, and the facts it read of its setup (child_facts:
    `packages` apart, the list its digest is made of)."""

    device: DeviceInfo
    setup: Fingerprint = field(default_factory=dict)
    packages: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Fact | Fingerprint]:
        """As the probe child sends it (events.DeviceSeen): the device's fields, and its setup with the package list."""
        return {**self.device.to_json(), "setup": {**self.setup, "packages": dict(self.packages)}}

    @classmethod
    def from_json(cls, data: Mapping[str, Fact | Fingerprint]) -> Probed:
        setup = dict(data.get("setup") or {})
        packages = setup.pop("packages", None) or {}
        return cls(DeviceInfo.from_json(data), setup, packages)


def collect(probed: Probed, key: str, environ: Mapping[str, str], threads: int, malloc: str,
            dispatch: str, preload: tuple[str, ...]) -> dict[str, Fact]:
    """The session's fingerprint: the probe child's `device` (with its "setup" facts) and the host's.

    "packages" is the digest of the imported packages; "package_versions"
    holds the list itself (the report keeps it, a baseline file keeps it once).
    """
    seen = probed.device
    return {
        "key": key, **library_versions(), "python": platform.python_version(),
        "cuda": seen.cuda_version, "driver": seen.driver, "gpu_name": seen.gpu_name, "gpu_memory": seen.gpu_memory,
        **host_facts(environ, threads, malloc, dispatch, preload), **probed.setup,
        "packages": packages_digest(probed.packages), "package_versions": dict(probed.packages),
    }


def hardware_key(seen: DeviceInfo) -> str:
    """'cpu-x86_64' for a host without CUDA, else e.g. 'nvidia-h100-80gb-hbm3'."""
    if not seen.cuda:
        return f"cpu-{platform.machine()}"
    name = re.sub(r"^nvidia\s+", "", seen.gpu_name.strip(), flags=re.IGNORECASE)
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not re.search(r"\d+gb", slug):
        slug += f"-{round(seen.gpu_memory / 2**30)}gb"
    return f"nvidia-{slug}"


# -- the parent's: the host ---------------------------------------------------------------------------------------

def host_facts(environ: Mapping[str, str], threads: int, malloc: str, dispatch: str,
               preload: tuple[str, ...]) -> dict[str, Fact]:
    """What the parent knows of the children's setup: `environ` is the forkserver's environment."""
    model, flags = cpu_info()
    return {
        "cpu": model,
        "cpu_level": x86_level(flags),
        "kernel": platform.release(),
        "glibc": _glibc(),
        "thp": _thp(),
        "threads": threads,
        "malloc": malloc,
        "malloc_env": " ".join(f"{k}={v}" for k, v in sorted(environ.items()) if _ALLOCATOR_ENV.match(k)) or None,
        "cuda_alloc_conf": environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "dispatch": dispatch,
        "preload": " ".join(preload),
    }


def cpu_info(path: str = "/proc/cpuinfo") -> tuple[str | None, set[str]]:
    """The CPU's model name and flags, from /proc/cpuinfo (None and no flags where it cannot be read)."""
    model, flags = None, set()
    try:
        with open(path) as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model is None:
                    model = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = set(value.split())
                if model and flags:
                    break
    except OSError:
        pass
    return model or platform.processor() or None, flags


def x86_level(flags: set[str]) -> str | None:
    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    return next((name for name, needed in _X86_LEVELS if needed <= flags), "x86-64")


def _thp(path: str = "/sys/kernel/mm/transparent_hugepage/enabled") -> str | None:
    try:
        with open(path) as fh:
            found = re.search(r"\[(\w+)\]", fh.read())
    except OSError:
        return None
    return found.group(1) if found else None


def _glibc() -> str | None:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError, AttributeError):
        return None


def library_versions() -> dict[str, str | None]:
    """The named libraries' versions, read from metadata (nothing imported)."""
    from importlib import metadata

    out: dict[str, str | None] = {}
    for package in LIBRARY_PACKAGES:
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = None
    return out


# -- the probe child's: what a fresh child of the forkserver sees -------------------------------------------------

def child_facts() -> dict[str, Fact]:
    """Read in a fresh child of the forkserver, before it does anything: its floor, kernel capability, packages,
    and whether the libraries' modules come from their bytecode (bytecode_seen).

    The floor is the RSS the child starts with: the pages of everything the
    forkserver imported, which every measured child inherits.
    """
    read = status("self")
    torch = sys.modules.get("torch")
    try:
        isa = torch.backends.cpu.get_cpu_capability()
    except AttributeError:  # torch not preloaded (a torch-free suite), or a stand-in without it
        isa = None
    return {"floor": None if read is None else read.rss, "isa": isa, "packages": imported_packages(),
            **bytecode_seen(LIBRARY_PACKAGES), "interpreter": interpreter_hooks()}


def interpreter_hooks(environ: Mapping[str, str] = os.environ) -> str | None:
    """The interpreter's own debug hooks in this process, which move every allocation's host RAM: dev mode (-X dev,
    PYTHONDEVMODE: the debug allocator), PYTHONMALLOC, tracemalloc (-X tracemalloc); None: Python's default."""
    import tracemalloc  # a C module's wrapper, already loaded where -X tracemalloc is on

    hooks = ["dev mode"] if sys.flags.dev_mode else []
    if environ.get("PYTHONMALLOC"):
        hooks.append(f"PYTHONMALLOC={environ['PYTHONMALLOC']}")
    if tracemalloc.is_tracing():
        hooks.append("tracemalloc")
    return ", ".join(hooks) or None


def preload_seen(preload: list[str] | tuple[str, ...], modules: Mapping[str, ModuleType] | None = None) -> str:
    """The preload list as a child of the forkserver found it: a module whose import failed there (the forkserver
    skips it silently) is marked, so the fingerprint says the floor was made without it."""
    modules = sys.modules if modules is None else modules
    return " ".join(name if name in modules else f"{name}{NOT_IMPORTED}" for name in preload)


def imported_packages() -> dict[str, str]:
    """Distribution -> version of every distribution this process has imported from."""
    from importlib import metadata

    by_module = metadata.packages_distributions()
    found: dict[str, str] = {}
    for module in {name.partition(".")[0] for name in list(sys.modules)}:
        for dist in by_module.get(module, ()):
            if dist not in found:
                try:
                    found[dist] = metadata.version(dist)
                except metadata.PackageNotFoundError:
                    continue
    return dict(sorted(found.items(), key=lambda kv: kv[0].lower()))


def packages_digest(packages: Mapping[str, str]) -> str:
    blob = "\n".join(f"{name.lower()}=={version}" for name, version in sorted(packages.items(), key=lambda kv: kv[0].lower()))
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def bytecode_seen(libraries: Iterable[str], modules: Mapping[str, ModuleType] | None = None) -> dict[str, str | None]:
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


def library_sources(libraries: Iterable[str], modules: Mapping[str, ModuleType] | None = None) -> list[str]:
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
