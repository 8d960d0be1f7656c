"""Making the environment a case declares: its requirements resolved, and only what they change installed.

How (docs/declaring.md, "Its own environment", says why):

1. Resolve, as an install into the running environment would: `uv pip
   install --dry-run` aimed at the running interpreter or, where uv is
   missing, pip's (`pip install --dry-run --report`). Each keeps what is
   installed wherever it satisfies the requirements, and reads an installed
   distribution's requirements from its own metadata: the running torch's,
   not those of the registry's build of that version, which is a CUDA build
   whose nvidia and triton packages would come in beside it (gigabytes).
   Metadata only: no wheel of a package that stays as it is is downloaded.
2. The overlay: the resolved packages whose version differs from the running
   one's (or which the running environment lacks). Where torch is among them,
   nothing is made (EnvironmentFailed, kind "torch"): the registry's Linux
   torch wheels are CUDA builds of gigabytes.
3. Make. A venv holding the overlay alone (installed with --no-deps, the
   resolution being whole), and a .pth file that puts the running
   environment's site folders behind its own: the overlay wins, everything
   else (torch, the plugin) is the running environment's.

Where no index can be reached, GPU_BUDGET_WHEELHOUSE names a folder of
wheels taken as the resolution, made where one was (isolate/wheelhouse.py):
steps 1 and 2 read the folder instead (its wheels whose version the running
environment lacks), and step 3 installs them from it alone (--no-index).

Cached across runs under `root`: a resolution by a digest of its inputs (the
requirements, the interpreter, the running environment's versions, the
tool, the index settings it reads: index_settings.py), a venv by a digest of
what it holds and where its wheels came from (those index settings, or the
wheelhouse); each made under a file lock, so
xdist workers make it once between them and the others find it made. A
requirement that cannot resolve or install raises EnvironmentFailed naming it:
a case is never measured in the running environment instead. That failure
is remembered under `root` too (env_failures.py): a later session raises it
again at once, without trying, until the requirements change or
--gpu-budget-update asks for another try.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import re
import shutil
import site
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from gpu_budget.declare.environment import canonical
from gpu_budget.declare.params import Json
from gpu_budget.isolate import env_failures
from gpu_budget.isolate.env_failures import EnvironmentFailed
from gpu_budget.isolate.index_settings import index_settings, tool_environ
from gpu_budget.isolate.tool_process import run_tool
from gpu_budget.isolate.wheelhouse import VARIABLE as WHEELHOUSE
from gpu_budget.isolate.wheelhouse import Wheelhouse
from gpu_budget.model.result import EnvironmentRecord

TOOLS = ("uv", "pip")
COMPLETE = ".gpu-budget-complete"  # written last: a venv without it was cut off, and is made again
PTH = "zz-gpu-budget-running.pth"
# the installed-package folders a PYTHONPATH held (a carried kit's): the venv puts them behind its own site folder, as
# it puts the running environment's, so no release there shadows the overlay's (split_paths, Remote)
BEHIND = "GPU_BUDGET_BEHIND"
# packaging parses a marker's strings with ast.literal_eval, and CPython 3.11's AST constructor is not safe across
# threads ("SystemError: AST constructor recursion depth mismatch", python/cpython#106905): callers making
# environments from threads read the running packages' requirements one at a time
_READING_REQUIRES = threading.Lock()
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")
TOOL_TIMEOUT = 1800  # seconds for one resolve or install
LOCK_WAIT = 0.05  # seconds on the lock past which a record says it waited for another process making it
TORCH = "torch"  # the one distribution an overlay may not hold (its Linux wheels are CUDA builds of gigabytes)


@dataclass(frozen=True)
class Tool:
    """The installer: uv (its binary) or pip (the running interpreter's)."""

    name: str
    argv: tuple[str, ...]


def find_tool(prefer: str | None = None) -> Tool:
    """uv where it is found (on PATH, beside this interpreter, or as the `uv` package), else pip; `prefer` forces one."""
    if prefer is not None and prefer not in TOOLS:
        raise ValueError(f"environment tool {prefer!r}: expected one of {', '.join(TOOLS)}")
    if prefer in (None, "uv"):
        uv = shutil.which("uv") or _beside_interpreter("uv") or _uv_package()
        if uv:
            return Tool("uv", (uv,))
        if prefer == "uv":
            raise EnvironmentFailed("tool", "uv is not installed here (pip install uv)")
    if importlib.util.find_spec("pip") is not None:
        return Tool("pip", (sys.executable, "-m", "pip"))
    raise EnvironmentFailed("tool", "neither uv nor pip is installed in the running environment: a case's own "
                                    "environment needs one (pip install uv)")


def _beside_interpreter(name: str) -> str | None:
    path = Path(sys.executable).parent / name
    return str(path) if os.access(path, os.X_OK) else None


def _uv_package() -> str | None:
    if importlib.util.find_spec("uv") is None:
        return None
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except Exception:  # noqa: BLE001  a uv package without its binary: as missing
        return None


def _public(version: str) -> str:
    """A version without its local label ("2.13.0+cpu" -> "2.13.0"): what a registry's metadata names."""
    try:
        return Version(version).public
    except InvalidVersion:
        return version


def running_versions(local: bool = False) -> dict[str, str]:
    """Canonical name -> public version of every distribution the running interpreter finds (the first on its path);
    `local`: the version with its local label ("2.13.0+cpu"), which a requirement may name."""
    from importlib import metadata

    found: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.name
        if name and canonical(name) not in found:
            found[canonical(name)] = dist.version if local else _public(dist.version)
    return dict(sorted(found.items()))


def split_paths(paths: Sequence[str]) -> tuple[list[str], list[str]]:
    """`paths` (a PYTHONPATH's folders) as (the ones to keep first, the ones to put behind an environment's own site
    folder): a folder holding installed distributions goes behind, a project's folder of modules stays first."""
    first: list[str] = []
    behind: list[str] = []
    for path in dict.fromkeys(p for p in paths if p):
        (behind if _holds_distributions(path) else first).append(path)
    return first, behind


def _holds_distributions(folder: str) -> bool:
    try:
        with os.scandir(folder) as entries:
            return any(e.name.endswith((".dist-info", ".egg-info")) for e in entries)
    except OSError:
        return False


def running_sites() -> list[str]:
    """The running environment's site folders, in the order its interpreter reads them."""
    sites = [p for p in site.getsitepackages() if os.path.isdir(p)]
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    return sites + ([user] if user and os.path.isdir(user) else [])


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


@contextlib.contextmanager
def _locked(path: Path, waiting: Callable[[], None] | None = None) -> Iterator[None]:
    """An exclusive lock on `path` (created): other processes, xdist workers among them, wait here, `waiting` called
    once before a wait."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another process holds it
            if waiting is not None:
                waiting()
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run(argv: Sequence[str], kind: str, what: str, cwd: str | None = None, both: bool = False,
         tool: str = "pip") -> str:
    """Run a tool; its stdout (and stderr, `both`: where uv writes its plan), or EnvironmentFailed(kind) with `what`
    and the end of its stderr. uv is given pip's index settings as its own (index_settings.from_pip)."""
    try:
        proc = run_tool(argv, cwd, TOOL_TIMEOUT, tool_environ(tool))  # its builds end with it
    except subprocess.TimeoutExpired:  # a slow index or network: nothing said of the requirements
        timed_out = f"timed out after {TOOL_TIMEOUT} s"
        raise EnvironmentFailed(kind, f"{what}: {timed_out} ({env_failures.NOT_KEPT_TIMED_OUT})", timed_out,
                                passing=True) from None
    except OSError as exc:
        raise EnvironmentFailed(kind, f"{what}: {exc}") from None
    if proc.returncode < 0:  # killed (the OOM killer, a cancelled job): nothing said of the requirements
        killed = f"killed by {env_failures.signal_name(-proc.returncode)}"
        raise EnvironmentFailed(kind, f"{what}: {killed} ({env_failures.NOT_KEPT_KILLED})", killed, passing=True)
    if proc.returncode != 0:  # the tool's own words, on one line (uv wraps its sentences)
        lines = [line.strip() for line in (proc.stderr or proc.stdout).strip().splitlines()[-15:]]
        said = " ".join(line for line in lines if line and not line.startswith("WARNING:"))
        cut_off = env_failures.unreachable(proc.stderr + proc.stdout)  # pip says so in warnings alone
        no_room = not cut_off and env_failures.no_room(proc.stderr + proc.stdout)
        passing = (f" ({env_failures.NOT_KEPT})" if cut_off else f" ({env_failures.NOT_KEPT_NO_ROOM})" if no_room
                   else "")
        raise EnvironmentFailed(kind, f"{what}: {said or f'exit {proc.returncode}'}{passing}",
                                env_failures.key_line(proc.stderr or proc.stdout), passing=bool(passing))
    return proc.stdout + (proc.stderr if both else "")


def _named(requirements: Sequence[str], text: str) -> list[str]:
    """The requirements a tool's error names (all of them where it names none)."""
    lowered = text.lower()
    named = [r for r in requirements if Requirement(r).name.lower() in lowered
             or canonical(Requirement(r).name) in lowered]
    return named or list(requirements)


# -- resolving ---------------------------------------------------------------------------------------------

def resolve(requirements: Sequence[str], tool: Tool, running: dict[str, str]) -> dict[str, str]:
    """The overlay: canonical name -> version, for each resolved package whose version the running environment
    does not have."""
    with tempfile.TemporaryDirectory(prefix="gpu-budget-resolve-") as tmp:
        Path(tmp, "requirements.in").write_text("\n".join(requirements) + "\n")
        try:
            pins = _resolve_uv(tmp, tool, running) if tool.name == "uv" else _resolve_pip(tmp, tool)
        except EnvironmentFailed as exc:
            named = ", ".join(_named(requirements, str(exc)))
            raise EnvironmentFailed("resolve", f"cannot resolve {named}: {exc}", exc.error,
                                    passing=exc.passing) from None
    return {name: version for name, version in sorted(pins.items()) if running.get(name) != _public(version)}


def _resolve_uv(tmp: str, tool: Tool, running: dict[str, str]) -> dict[str, str]:
    """What `uv pip install` would install into the running environment: its installed distributions are read as
    they are (the running torch's own requirements, not the registry's CUDA build's), kept wherever they satisfy."""
    # run where the install runs (this process's folder): uv reads the project's uv.toml or [tool.uv] found from there
    said = _run([*tool.argv, "pip", "install", "--dry-run", "--python", sys.executable, "-r",
                 str(Path(tmp, "requirements.in"))], "resolve", "uv pip install --dry-run said", both=True, tool="uv")
    pins = {}
    for line in said.splitlines():
        if not line.startswith(" + "):
            continue
        found = _PIN.match(line.strip()[2:])
        if found:
            pins[canonical(found.group(1))] = found.group(2)
        elif " @ " in line:  # "+ name @ url": no version to install by, and never to be left out of the overlay
            name, _, url = line.strip()[2:].partition(" @ ")
            raise EnvironmentFailed("resolve", _from_url(name.strip(), url.strip()))
    return pins


def _from_url(name: str, url: str) -> str:
    return (f"{name} comes from a URL ({url}): an environment installs released versions (NAME==VERSION) from an "
            f"index or {WHEELHOUSE}")


@dataclass(frozen=True)
class PipReport:
    """What `pip install --dry-run --report` would install: (name, version) of each distribution."""

    installs: tuple[Pin, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Json]) -> PipReport:
        return cls(tuple(Pin(item["metadata"]["name"], item["metadata"]["version"],
                             item.get("download_info", {}).get("url", "") if item.get("is_direct") else "")
                         for item in data.get("install", [])))


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    url: str = ""  # a direct reference's (its version is not the index's to install)


def _resolve_pip(tmp: str, tool: Tool) -> dict[str, str]:
    report = Path(tmp, "report.json")  # pip keeps what is installed here wherever it satisfies the requirements
    # run where the install runs (this process's folder): a relative PIP_FIND_LINKS is read from there
    _run([*tool.argv, "install", "--dry-run", "--quiet", "--no-input", "--report", str(report), "-r",
          str(Path(tmp, "requirements.in"))], "resolve", "pip install --dry-run said")
    pins = PipReport.from_json(json.loads(report.read_text())).installs
    for pin in pins:
        if pin.url:
            raise EnvironmentFailed("resolve", _from_url(pin.name, pin.url))
    return {canonical(pin.name): pin.version for pin in pins}


# -- making ------------------------------------------------------------------------------------------------

def _python_of(folder: Path) -> Path:
    return folder / "bin" / "python"


def _site_of(python: Path) -> str:
    return subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, stdin=subprocess.DEVNULL).stdout.strip()


def _make_venv(folder: Path, overlay: dict[str, str], tool: Tool, sites: list[str], links: Path | None = None) -> None:
    """A venv at `folder` holding `overlay` alone, the running environment's site folders behind its own; its wheels
    from `links` alone where given (a wheelhouse: no index)."""
    pins = [f"{name}=={version}" for name, version in overlay.items()]
    offline = ["--no-index", "--find-links", str(links)] if links is not None else []
    if tool.name == "uv":
        _run([*tool.argv, "venv", "--quiet", "--python", sys.executable, str(folder)], "install", "uv venv failed", tool="uv")
    else:
        _run([sys.executable, "-m", "venv", "--without-pip", str(folder)], "install", "python -m venv failed")
    python = _python_of(folder)
    site_folder = _site_of(python)
    # a .pth line that imports runs at startup, after the venv's own folder is on sys.path: addsitedir appends, and
    # reads the running folders' own .pth files (an editable install's path among them); BEHIND's first, as a
    # PYTHONPATH comes before site-packages
    behind = f"import os, site; list(map(site.addsitedir, filter(None, os.environ.get({BEHIND!r}, '').split(os.pathsep))))\n"
    Path(site_folder, PTH).write_text(behind + "".join(f"import site; site.addsitedir({p!r})\n" for p in sites))
    install = ([*tool.argv, "pip", "install", "--quiet", "--python", str(python), "--no-deps", *offline, *pins]
               if tool.name == "uv" else
               [*tool.argv, "--python", str(python), "install", "--quiet", "--no-input", "--no-deps", *offline, *pins])
    try:
        _run(install, "install", f"{tool.name} pip install said" if tool.name == "uv" else "pip install said",
             tool=tool.name)
    except EnvironmentFailed as exc:
        named = ", ".join(_named(pins, str(exc)))
        raise EnvironmentFailed("install", f"cannot install {named}: {exc}", exc.error,
                                passing=exc.passing) from None
    missing = _not_in(site_folder, overlay)
    if missing:  # a setting of the tool's own sent them elsewhere: the venv would run the running versions instead
        raise EnvironmentFailed("tool", f"{', '.join(missing)} is not in the environment {folder} after {tool.name} "
                                        "installed it without an error: a setting sends its installs elsewhere (pip's "
                                        "target, prefix or root in its configuration: `pip config list` names it); "
                                        "remove it, or point PIP_CONFIG_FILE at a file without it")


def _not_in(site_folder: str, overlay: Mapping[str, str]) -> list[str]:
    """Each overlay package ("name version") the venv's site folder holds no distribution of (by its metadata's
    name and version, as the folder's own name may spell them otherwise)."""
    from importlib import metadata

    held = {(canonical(dist.name), _comparable(dist.version)) for dist in metadata.distributions(path=[site_folder])
            if dist.name}
    return [f"{name} {version}" for name, version in overlay.items() if (name, _comparable(version)) not in held]


def _comparable(version: str) -> Version | str:
    """A version as two spellings of it compare equal ("1.0" and "1.0.0"), its local label aside."""
    try:
        return Version(Version(version).public)
    except InvalidVersion:
        return version


def make(requirements: Sequence[str], root: Path, tool: Tool | None = None, since: float | None = None,
         retry: bool = False, say: Callable[[str], None] | None = None) -> EnvironmentRecord:
    """The environment of `requirements`, made under `root` or found made there; EnvironmentFailed where it cannot be.

    A failure to resolve or install is remembered under `root` (env_failures.py) and raised again at once by a
    later session, without trying, unless `retry` (--gpu-budget-update). since: when the session began
    (time.time(); default: now), so that one remembered from then on is read as another process's of this one.
    say: told a line as a resolve or an install starts, or a wait on another process's (minutes, where an index
    times out: a wait said nowhere looks like a hang).
    """
    t0 = time.monotonic()
    root, tool = Path(root).resolve(), tool or find_tool()
    requirements = tuple(requirements)
    try:
        wheels = Wheelhouse.read(os.environ[WHEELHOUSE]) if os.environ.get(WHEELHOUSE) else None
    except EnvironmentFailed as exc:
        exc.seconds, exc.tool = round(time.monotonic() - t0, 3), tool.name
        raise
    label = tool.name if wheels is None else f"{tool.name}, wheels from {wheels.folder} ({wheels.digest})"
    memory = env_failures.Memory(root, requirements, label, time.time() if since is None else since, retry, t0,
                                 index_settings(tool.name, root))
    try:
        memory.check()
        made = _make(requirements, root, tool, memory, wheels, _Saying(requirements, say))
        env_failures.forget(root, memory.name)  # made (tried again, or past an unreadable entry): no failure to keep
    except EnvironmentFailed as exc:
        exc.seconds, exc.tool = memory.spent(), memory.tool
        raise
    except OSError as exc:  # the folder's own fault (read-only, full, under a file): not the requirements'
        raise EnvironmentFailed("folder", _unwritable(root, exc), seconds=memory.spent(), tool=memory.tool) from None
    return made


def _unwritable(root: Path, exc: OSError) -> str:
    where = f": {exc.filename}" if exc.filename and str(exc.filename) != str(root) else ""
    return (f"the environments folder {root} cannot be written ({exc.strerror or exc}{where}); point "
            "--gpu-budget-envs at one that can")


@dataclass(frozen=True)
class _Saying:
    """What make() says of one environment's steps, where it was given a way to (`say`)."""

    requirements: tuple[str, ...]
    say: Callable[[str], None] | None

    def __call__(self, doing: str, how: str = "") -> None:
        if self.say is not None:
            self.say(f"gpu-budget: {doing} the environment of {', '.join(self.requirements)}{how}")

    def waiting(self, doing: str) -> Callable[[], None]:
        return lambda: self(f"waiting for another process {doing}")


def _make(requirements: tuple[str, ...], root: Path, tool: Tool, memory: env_failures.Memory,
          wheels: Wheelhouse | None = None, saying: _Saying | None = None) -> EnvironmentRecord:
    saying = saying or _Saying(requirements, None)
    t0 = memory.started
    labelled = running_versions(local=True)  # a requirement may name a local label ("torch==2.13.0+cpu")
    running = {name: _public(version) for name, version in labelled.items()}
    overlay, waited = ((wheels.overlay(requirements, labelled), 0.0) if wheels is not None
                       else _resolution(requirements, tool, running, root, memory, saying))
    named = {}
    for line in requirements:
        name = canonical(Requirement(line).name)
        named[name] = overlay.get(name) or running.get(name) or "?"
    if TORCH in overlay:
        have = running.get(TORCH)
        raise EnvironmentFailed("torch", f"{', '.join(requirements)} need torch {overlay[TORCH]}, not the running "
                                         f"{'torch ' + have if have else 'environment, which has no torch'}: another "
                                         "torch is not downloaded (the registry's Linux torch wheels are CUDA builds of "
                                         "gigabytes); run it where that torch is installed")
    if not overlay:  # the running environment satisfies them: the case runs in it
        return EnvironmentRecord(requirements, {}, named, "", memory.tool, round(time.monotonic() - t0, 3), True,
                                 sys.executable, waited=round(waited, 3) if waited >= LOCK_WAIT else None)
    sites = running_sites()
    key = _digest({"python": sys.executable, "version": sys.version, "sites": sites, "overlay": overlay,
                   "pth": BEHIND,  # a venv whose .pth reads no BEHIND is not this one
                   "from": memory.tool, "index": list(memory.index)})  # another index may hold another wheel of a version
    folder = root / f"env-{key}"
    asked = time.monotonic()
    with _locked(root / f"env-{key}.lock", saying.waiting("making")), memory.kept():
        waited += time.monotonic() - asked  # another process (an xdist worker) making it holds the lock
        cached = (folder / COMPLETE).exists()
        remade = not cached and folder.exists()  # cut off while it was being made (a session killed): said
        if not cached:
            memory.check()  # another process failed to make it while this one waited
            if remade:
                shutil.rmtree(folder)
            saying(f"installing {', '.join(f'{n}=={v}' for n, v in overlay.items())} into", f" ({tool.name})")
            try:
                _make_venv(folder, overlay, tool, sites, wheels.folder if wheels is not None else None)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            (folder / COMPLETE).write_text(json.dumps({"requirements": list(requirements), "overlay": overlay}) + "\n")
    left_out = wheels.unmet(overlay, labelled, requirements) if wheels is not None else ()  # the carried resolution's trims
    return EnvironmentRecord(requirements, overlay, named, key, memory.tool, round(time.monotonic() - t0, 3), cached,
                             str(_python_of(folder)), tuple(sorted({*conflicts(overlay), *left_out})),
                             round(waited, 3) if waited >= LOCK_WAIT else None, remade=remade)


def conflicts(overlay: Mapping[str, str]) -> tuple[str, ...]:
    """Running packages the overlay leaves in place whose own requirements its versions break, each as
    "datasets 5.2.0 needs huggingface-hub>=1.31.0 (here 0.36.2)". An install into the running environment keeps
    them and resolves only what the requirements pull in, so it does not see them; a case that imports one there
    may fail, and this says why before it does."""
    with _READING_REQUIRES:
        return _conflicts(overlay)


def _conflicts(overlay: Mapping[str, str]) -> tuple[str, ...]:
    from importlib import metadata

    found, seen = [], set()
    for dist in metadata.distributions():
        name = canonical(dist.name or "")
        if not name or name in overlay or name in seen:
            continue
        seen.add(name)
        for line in dist.requires or ():
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            have = overlay.get(canonical(req.name))
            if have is None or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
                continue
            if not req.specifier.contains(have, prereleases=True):
                found.append(f"{name} {dist.version} needs {req.name}{req.specifier} (here {have})")
    return tuple(sorted(found))


def _resolution(requirements: tuple[str, ...], tool: Tool, running: dict[str, str], root: Path,
                memory: env_failures.Memory, saying: _Saying) -> tuple[dict[str, str], float]:
    """The overlay of `requirements`, resolved once for these inputs and kept under `root/resolved`, and the seconds
    spent waiting on its lock while another process resolved it; a failure is remembered (`memory`) before the lock
    is let go."""
    key = _digest({"requirements": requirements, "python": sys.executable, "version": sys.version,
                   "running": running, "tool": tool.name, "how": "dry-run install",
                   "index": list(memory.index)})  # another index may hold another release that satisfies them
    kept = root / "resolved" / f"{key}.json"
    asked = time.monotonic()
    with _locked(root / "resolved" / f"{key}.lock", saying.waiting("resolving")), memory.kept():
        waited = time.monotonic() - asked  # resolving is part of making: a wait here is a wait for another's
        if kept.exists():
            return json.loads(kept.read_text()), waited
        memory.check()  # another process failed to resolve it while this one waited
        saying("resolving", f" ({tool.name})")
        overlay = resolve(requirements, tool, running)
        tmp = kept.with_suffix(".tmp")
        tmp.write_text(json.dumps(overlay, sort_keys=True) + "\n")
        os.replace(tmp, kept)
    return overlay, waited
