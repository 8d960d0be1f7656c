"""What moves a peak besides the code: the measured children's setup, and what a difference means.

Every baseline entry stores the fingerprint it was recorded under; a run
compares it with its own and names the fields that differ. What is then
compared, and how closely, depends on what the field is shown to move
(docs/baselines.md, "Across machines"; benchmarks/RESULTS.md, "Across setups"):

- LIBRARIES (torch, transformers, ... and CUDA, the driver, and the
  environment a case declares: the versions it lays over the running ones):
  compared as usual. Catching the regression an upgrade brings is what the
  gate is for.
- FLOOR (the packages the children import, the preload list, the CPU model,
  the kernel): measured to move only the import floor, the RSS a child
  inherits from the forkserver (packages a library imports only because they
  are installed: accelerate imports boto3, httpcore imports trio, +12 MiB).
  The floor is measured in every session, and the host RAM peak is compared
  after taking the floor's difference off.
- SETUP (the CPU capability the kernels run at, threads per child): move the
  peak itself, by an amount measured to stay within the default tolerance
  (a host without AVX2 against the AVX2 pin, 2 threads against 1); compared
  with the floor taken off, at the test's tolerance.
- FOREIGN (the allocator's mode and environment, transparent huge pages,
  glibc, and AVX-512 kernels on one side only: the pin off, measured at up to
  +4.2 %; the number of ranks a launcher case runs, which reshapes each rank's share;
  the libraries' modules loaded from bytecode or compiled from source, bytecode.py,
  which moves the host RAM peak by what compiling holds, not by a library's own
  change): the host RAM peak is not compared ("record a baseline for this
  setup"), the exact metrics (tensor bytes, allocated VRAM) still are.

The parent reads the host's facts here; the probe child reads what only a
child of the forkserver sees (child_facts): the floor, the kernels' capability,
the packages imported, whether their bytecode is used.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import sys
from typing import Any

from gpu_budget.judge import bytecode
from gpu_budget.measure.procfs import read_status
from gpu_budget.model.setup import Setup

LIBRARY_PACKAGES = ("torch", "transformers", "peft", "accelerate", "bitsandbytes", "funasr")
LIBRARIES = (*LIBRARY_PACKAGES, "python", "cuda", "driver", "gpu_name", "gpu_memory", "environment")
FLOOR = ("packages", "preload", "cpu", "kernel")
SETUP = ("isa", "threads", "command_env")
FOREIGN = ("malloc", "malloc_env", "thp", "glibc", "ranks", "bytecode")
POLICY = {**dict.fromkeys(LIBRARIES, "libraries"), **dict.fromkeys(FLOOR, "floor"),
          **dict.fromkeys(SETUP, "setup"), **dict.fromkeys(FOREIGN, "foreign")}
# Reported, never a difference of their own: the pin that produced `isa`, the CPU's own level, the floor itself,
# what `bytecode` was read from (how many modules had a usable .pyc, whether the children may write one)
INFO = ("dispatch", "cpu_level", "cuda_alloc_conf", "floor", "launcher", "bytecode_seen")
UNKNOWN_WHEN_NONE = ("bytecode",)  # None: nothing to read it from (no library installed), never a difference
FLOOR_MOVED = 4 * 2**20  # a floor shift below the tolerance's absolute term moves no verdict, even left on

# Environment variables that change how the children allocate host memory
_ALLOCATOR_ENV = re.compile(r"^(MALLOC_.*|GLIBC_TUNABLES|LD_PRELOAD|JEMALLOC_.*|TCMALLOC_.*|THP_MEM_ALLOC_ENABLE)$")
# x86-64 micro-architecture levels (psABI): the flags /proc/cpuinfo shows for each
_X86_LEVELS = (
    ("x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}),
    ("x86-64-v3", {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe", "xsave"}),
    ("x86-64-v2", {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"}),
)


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


def collect(device: dict[str, Any], key: str, environ: dict[str, str], threads: int, malloc: str, dispatch: str,
            preload: tuple[str, ...]) -> dict[str, Any]:
    """The session's fingerprint: the probe child's `device` (with its "setup" facts) and the host's.

    "packages" is the digest of the imported packages; "package_versions"
    holds the list itself (the report keeps it, a baseline file keeps it once).
    """
    device = dict(device)
    setup = dict(device.pop("setup", {}))
    packages = setup.pop("packages", {})
    return {
        "key": key, **library_versions(), "python": platform.python_version(),
        "cuda": device.get("cuda_version"), "driver": device.get("driver"),
        "gpu_name": device.get("gpu_name"), "gpu_memory": device.get("gpu_memory"),
        **host_facts(environ, threads, malloc, dispatch, preload), **setup,
        "packages": packages_digest(packages), "package_versions": packages,
    }


def host_facts(environ: dict[str, str], threads: int, malloc: str, dispatch: str, preload: tuple[str, ...]) -> dict[str, Any]:
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


def child_facts() -> dict[str, Any]:
    """Read in a fresh child of the forkserver, before it does anything: its floor, kernel capability, packages,
    and whether the libraries' modules come from their bytecode (bytecode.seen).

    The floor is the RSS the child starts with: the pages of everything the
    forkserver imported, which every measured child inherits.
    """
    status = read_status("self")
    floor = status.get("VmRSS") if status is not None else None
    try:
        isa = sys.modules["torch"].backends.cpu.get_cpu_capability()
    except (KeyError, AttributeError):  # torch not preloaded (a torch-free suite), or a stand-in without it
        isa = None
    return {"floor": floor, "isa": isa, "packages": imported_packages(), **bytecode.seen(LIBRARY_PACKAGES)}


NOT_IMPORTED = "(not-imported)"  # no space: the preload list is split on whitespace


def preload_seen(preload: list[str] | tuple[str, ...], modules=None) -> str:
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


def packages_digest(packages: dict[str, str]) -> str:
    blob = "\n".join(f"{name.lower()}=={version}" for name, version in sorted(packages.items(), key=lambda kv: kv[0].lower()))
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


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


def differences(then: dict[str, Any], now: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Field -> (baseline's, now) for every policy field the baseline recorded and that differs.

    A field the baseline does not hold (recorded before it existed) is not a difference, nor one that either side
    could not read (UNKNOWN_WHEN_NONE: `bytecode` where no library was installed to check).
    """
    return {k: (then[k], now.get(k)) for k in POLICY if k in then and then[k] != now.get(k)
            and not (k in UNKNOWN_WHEN_NONE and None in (then[k], now.get(k)))}



def between(then: dict[str, Any] | None, now: dict[str, Any], packages_then: dict[str, Any] | None = None,
            packages_now: dict[str, Any] | None = None) -> Setup:
    """How this run's setup (`now`, its fingerprint) relates to a baseline entry's (`then`; None: no entry).

    A field whose only effect is the import floor (FLOOR) is named only when the floor moved by FLOOR_MOVED or
    more; below that it is kept quiet. `packages_*`: the package lists the fingerprints' digests name, where known.
    """
    then = then or {}
    diffs = differences(then, now)
    shift = now["floor"] - then["floor"] if then.get("floor") and now.get("floor") else 0
    moved = abs(shift) >= FLOOR_MOVED
    quiet = {} if moved else {k: pair for k, pair in diffs.items() if policy_of(k, *pair) == "floor"}
    shown = {k: pair for k, pair in diffs.items() if k not in quiet}
    return Setup(shown, shift, tuple(describe(shown, packages_then, packages_now, now)),
                 tuple(describe(quiet, packages_then, packages_now, now)), worst_policy(shown), moved)


def policy_of(key: str, then: Any, now: Any) -> str:
    """What a difference in `key` means; AVX-512 kernels on one side only move host RAM too far to compare."""
    if key == "isa" and "AVX512" in (str(then), str(now)):
        return "foreign"
    return POLICY[key]


def worst_policy(diffs: dict[str, tuple[Any, Any]]) -> str | None:
    """The strictest consequence among the differing fields: foreign > setup > floor > libraries."""
    kinds = {policy_of(k, *pair) for k, pair in diffs.items()}
    return next((kind for kind in ("foreign", "setup", "floor", "libraries") if kind in kinds), None)


def describe(diffs: dict[str, tuple[Any, Any]], packages_then: dict[str, str] | None = None,
             packages_now: dict[str, str] | None = None, facts_now: dict[str, Any] | None = None) -> list[str]:
    """'threads 1 -> 2', 'packages +boto3 1.43.11, +trio 0.31.0' ...: what a row says of each difference
    (`facts_now`: this run's fingerprint, whose reported fields say what a difference was read from)."""
    out = []
    for key, (then, now) in diffs.items():
        if key == "packages" and packages_then is not None and packages_now is not None:
            out.append("packages " + package_change(packages_then, packages_now))
        elif key == "bytecode":
            out.append(bytecode_change(then, now, (facts_now or {}).get("bytecode_seen")))
        else:
            out.append(f"{key} {then} -> {now}")
    return out


_BYTECODE_SAID = {bytecode.CACHED: "loaded from their .pyc", bytecode.SOURCE: "compiled from source",
                  bytecode.MIXED: "partly compiled from source"}


def bytecode_change(then: Any, now: Any, seen: str | None) -> str:
    """'bytecode cached -> source (the libraries' modules loaded from their .pyc in the baseline's run, compiled
    from source in this one: 0 of 784 modules with a usable .pyc; ...): write their bytecode once ...': what a row
    says when the children compile what the baseline's loaded, or the reverse."""
    said = f"bytecode {then} -> {now} (the libraries' modules {_BYTECODE_SAID.get(then, then)} in the baseline's " \
           f"run, {_BYTECODE_SAID.get(now, now)} in this one"
    said += f": {seen})" if seen else ")"
    if now in (bytecode.SOURCE, bytecode.MIXED):
        said += (": write their bytecode once (python -m compileall on the environment, uv's --compile-bytecode) "
                 "or run without PYTHONDONTWRITEBYTECODE")
    return said


def package_change(then: dict[str, str], now: dict[str, str]) -> str:
    lower_then = {k.lower(): (k, v) for k, v in then.items()}
    lower_now = {k.lower(): (k, v) for k, v in now.items()}
    parts = [f"+{lower_now[k][0]} {lower_now[k][1]}" for k in sorted(lower_now.keys() - lower_then.keys())]
    parts += [f"-{lower_then[k][0]}" for k in sorted(lower_then.keys() - lower_now.keys())]
    parts += [f"{lower_now[k][0]} {lower_then[k][1]} -> {lower_now[k][1]}" for k in sorted(lower_now.keys() & lower_then.keys())
              if lower_now[k][1] != lower_then[k][1]]
    return ", ".join(parts) or "(same)"


def hardware_key(device: dict[str, Any]) -> str:
    """'cpu-x86_64' for a host without CUDA, else e.g. 'nvidia-h100-80gb-hbm3'."""
    if not device.get("cuda"):
        return f"cpu-{platform.machine()}"
    name = re.sub(r"^nvidia\s+", "", device["gpu_name"].strip(), flags=re.IGNORECASE)
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not re.search(r"\d+gb", slug):
        slug += f"-{round(device['gpu_memory'] / 2**30)}gb"
    return f"nvidia-{slug}"
