"""Baseline files on disk: where they live, read bounded and validated, written atomically under a lock.

A baseline file is data, never code: JSON only, checked against the schema
below on every read, and a broken file is an error naming the file and the
entry, never silently replaced. It is read only when it is a regular file of
a baseline's size: a FIFO, a device or a huge file in its place (a pull
request can put one there) fails at once, naming it, instead of blocking or
filling memory. Writes are atomic (temp file + rename) and serialised by a
lock file beside the baseline file, so pytest-xdist workers, and any two
processes writing one folder, record side by side. A file git left with
conflict markers is named as a merge conflict, and resolve() keeps both sides'
entries (conflict.py). Only the store (store.py) calls this module; what a file's
data is: contents.py; what an entry holds and how one is made: baselines.py.
"""

from __future__ import annotations

import contextlib
import difflib
import fcntl
import json
import os
import re
import secrets
import stat
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import fields, replace
from pathlib import Path

from gpu_budget.judge import conflict, merge_base
from gpu_budget.judge.contents import SCHEMA, ByKey, Contents, Listing
from gpu_budget.judge.fingerprint import POLICY, Facts
from gpu_budget.model.budget import SCALES
from gpu_budget.model.entry import Entry
from gpu_budget.model.json_value import DuplicateKey, Json, JsonObject, NotJson, strict_loads
from gpu_budget.model.metric import ALL, JUDGED_GROWTH

# ram: the main process's peak; ram_tree: with its descendants (the gated one). Entries recorded before
# the tree was read hold no ram_tree and are compared on ram (compare.ram_compared).
HOST_RAM = ("ram", "ram_tree")
MAX_FILE_BYTES = 16 * 2**20  # read and written (a hostile file, a runaway one); the largest committed is ~0.1 MiB
# a byte count past any memory (a 64-bit counter's): one of 400 digits, which JSON allows, failed the case on an
# OverflowError once judged as a float
MAX_SIZE = 2**63


class BaselineError(ValueError):
    """A baseline file that cannot be trusted; the message names the file (and entry)."""


# pytest 9's pytest.toml and the hidden ini files too: a checkout without .git whose only marker is one of them was
# no project, its keys taken from the working folder
PROJECT_MARKERS = (".git", "pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "pytest.ini", "pytest.toml",
                   ".pytest.toml", ".pytest.ini")


def project_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` holding a project's marker (.git, pyproject.toml, ...); None outside
    any project."""
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return folder
    return None


def folder_for(root: Path, module: str | None = None) -> Path:
    """The baselines folder of a test module's file: `root` where absolute. A relative one (no ini file fixed
    pytest's rootdir, which then follows the folder pytest is started in) is taken from the project root of the
    test file (of the working folder without one), so every invocation folder of a project finds one store."""
    root = Path(root)
    if root.is_absolute():
        return root
    return (anchor_of(module) / root).resolve()


def anchor_of(module: str | None = None, root: Path | None = None) -> Path:
    """The folder a test file's baselines are anchored at, and its entries' keys are relative to: its project root,
    else (a file in no project, or no file given) the working folder's project root, else the working folder. A file
    in no project run from a subfolder of one was keyed from that subfolder, and its baselines looked for there.

    Where the baselines folder `root` is absolute (an ini file fixed pytest's rootdir) and lies outside that
    project, the project holding both: a monorepo's packages, each with its own pyproject.toml under one
    pytest.ini, share one baselines folder, and keys taken from each package's root would give
    packages/foo/tests/test_x.py and packages/bar/tests/test_x.py one key in one file."""
    start = Path(module).resolve().parent if module else Path.cwd()
    here = Path.cwd().resolve()
    own = project_root(start) or project_root(here) or here
    if root is None or not Path(root).is_absolute() or Path(root).is_relative_to(own):
        return own
    return project_root(Path(os.path.commonpath([Path(root).resolve(), own]))) or own


def replaced_baseline(path: Path) -> str | None:
    """Why a report may not be written to `path`: it is a baseline file (a path left over from another command would
    replace the baselines the next run is judged by); None where it is not (a file past MAX_FILE_BYTES, or one that
    is no JSON object, is no baseline file this gate reads)."""
    try:
        if path.suffix != ".json" or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    schema = data.get("schema") if isinstance(data, dict) else None
    if isinstance(schema, str) and schema.startswith(SCHEMA.rsplit("/", 1)[0] + "/"):
        return f"a baseline file (schema {schema!r}), which no report replaces: name another file"
    return None


def foreign(path: Path) -> str | None:
    """Why a *.json found in a baselines folder is no baseline file at all (a JSON value without the baselines schema or
    entries: a tool's cache, a hidden file, a stray report), or None where it is one or may be: one that cannot be
    read or parsed (a broken edit, conflict markers) is a baseline file gone wrong, reported where it is read."""
    try:
        data = json.loads(_read_bounded(Path(path)))
    except ValueError:  # BaselineError included: unreadable, too large, not UTF-8, not JSON
        return None
    schema = data.get("schema") if isinstance(data, dict) else None
    if isinstance(data, dict) and ("entries" in data or isinstance(schema, str) and schema.startswith(SCHEMA.rsplit("/", 1)[0] + "/")):
        return None
    return f"JSON with neither the {SCHEMA!r} schema nor entries"


def path_for(root: Path, hw_key: str, module: str) -> Path:
    """A test module's baseline file, <folder>/<hardware key>/<module's stem>.json: its key is the file's name alone,
    the same from any invocation folder."""
    return folder_for(root, module) / hw_key / f"{Path(module).stem}.json"


# -- schema -------------------------------------------------------------------

def _is_size(value: Json) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_SIZE)


def _sizes(by_metric: Json) -> bool:
    """An object of metric -> byte count (or null)."""
    return _size_problem(by_metric, "") is None


def _size_problem(by_metric: Json, where: str) -> str | None:
    """What makes `by_metric` (at `where`, as "phases['run']") no object of metric -> byte count, naming the bad
    metric or value; None where it is one."""
    if not isinstance(by_metric, dict):
        return f"{where} is {json.dumps(by_metric)}, expected an object of metric -> byte count"
    for metric, value in by_metric.items():
        if metric not in ALL:
            return f"unknown metric {metric!r} in {where} (known: {', '.join(ALL)})"
        if not _is_size(value):
            return f"{where}.{metric} is {json.dumps(value)}, expected a byte count or null"
    return None


REDO = "Fix it by hand or delete it and re-record with --gpu-budget-update."
KEEP = "Run the version that wrote it; keep the file (deleting it and re-recording drops its entries)."  # a newer one's
EITHER = ("A typo: fix it by hand. Else a later version of pytest-gpu-budget wrote it: run that version; keep the "
          "file (deleting it and re-recording drops its entries).")  # a name close matching cannot tell from a typo


def _newer_name(why: str) -> bool:
    """A metric or tolerance term this version does not know: a hand edit's typo, or a newer plugin's name."""
    return why.startswith("unknown metric ") or (why.startswith("unknown key ") and why.endswith("in 'tolerance': it "
                                                                                                  "holds 'rel' and 'abs' only"))


def validate(data: Json, path: Path, advice: str = REDO) -> None:
    """Raise BaselineError naming `path` and the entry when `data` is not a baseline file."""
    def fail(where: str, why: str) -> None:
        raise BaselineError(f"baseline file {path}: {where}: {why}. {advice}")

    if not isinstance(data, dict):
        fail("top level", "expected a JSON object")
    schema = data.get("schema")
    if isinstance(schema, str) and schema != SCHEMA and schema.startswith(SCHEMA.rsplit("/", 1)[0] + "/"):
        raise BaselineError(f"baseline file {path}: top level: 'schema' is {schema!r}, a version of the baseline "
                            f"format this pytest-gpu-budget does not read (it reads {SCHEMA!r}): another version of "
                            f"the plugin wrote it. {KEEP}")
    if schema != SCHEMA:
        fail("top level", f"'schema' is {schema!r}, expected {SCHEMA!r}")
    entries = data.get("entries")
    if not isinstance(entries, dict):
        fail("top level", "'entries' must be an object of scale -> test id -> entry")
    for scale, by_id in entries.items():
        if scale not in SCALES:  # a hand edit: its entries would be read by no case, and kept for good
            fail(f"scale {scale!r}", f"not a scale cases run at ({', '.join(SCALES)})")
        if not isinstance(by_id, dict):
            fail(f"scale {scale!r}", "expected an object of test id -> entry")
        for test_id, entry in by_id.items():
            where = f"entry {test_id!r} (scale {scale!r})"
            later = _later_key(entry) if isinstance(entry, dict) else None
            if later:  # a newer plugin's entry: REDO's re-recording would drop the file's every entry
                raise BaselineError(f"baseline file {path}: {where}: {later}. {KEEP}")
            why = _entry_problem(entry) if isinstance(entry, dict) else "expected an object"
            if why and advice == REDO and _newer_name(why):  # REDO's re-recording would drop every entry
                raise BaselineError(f"baseline file {path}: {where}: {why}. {EITHER}")
            if why:
                fail(where, why)
    packages = data.get("packages", {})
    if not isinstance(packages, dict) or not all(
        isinstance(listing, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in listing.items())
        for listing in packages.values()
    ):
        fail("top level", "'packages' must map digests to objects of package -> version")


ENTRY_KEYS = tuple(f.name for f in fields(Entry))  # what an entry holds: Entry.to_json writes each field by its name


def _entry_problem(entry: JsonObject) -> str | None:
    """What makes one entry's JSON not a baseline entry (a key it cannot hold, its figures, then what it was recorded
    under), or None."""
    return _unknown_key(entry) or _figures_problem(entry) or _recorded_problem(entry)


def _unknown_key(entry: JsonObject) -> str | None:
    """The first key of the entry no entry holds that reads like one, named: a hand edit's misspelt key ('tolerence')
    is read by no code, and the entry judged on the default it meant to replace, without a word."""
    key = next((key for key in entry if key not in ENTRY_KEYS), None)
    meant = difflib.get_close_matches(key, ENTRY_KEYS, n=1) if key is not None else []
    return f"unknown key {key!r} (did you mean {meant[0]!r}?): an entry holds {', '.join(ENTRY_KEYS)}" if meant else None


def _later_key(entry: JsonObject) -> str | None:
    """The first key of the entry no entry holds and like none of them, named: a later version's, which would be
    judged here as if absent; the file is that version's to read and write."""
    key = next((key for key in entry if key not in ENTRY_KEYS and not difflib.get_close_matches(key, ENTRY_KEYS, n=1)),
               None)
    return None if key is None else (f"unknown key {key!r} (a later version of pytest-gpu-budget may have written it: "
                                     f"then run that version): an entry holds {', '.join(ENTRY_KEYS)}")


def _figures_problem(entry: JsonObject) -> str | None:
    peaks = entry.get("peaks")
    if not isinstance(peaks, dict) or not any(metric in peaks for metric in HOST_RAM):
        return "'peaks' must be an object with at least 'ram' or 'ram_tree'"
    for metric, value in peaks.items():
        if metric not in ALL:
            return f"unknown metric {metric!r} in 'peaks' (known: {', '.join(ALL)})"
        if not _is_size(value):
            return f"peaks.{metric} is {value!r}, expected a byte count or null"
    empty = _no_host_ram(peaks, "peaks.", required=True)
    if empty:
        return empty
    phases = entry.get("phases", {})
    if not isinstance(phases, dict):
        return "'phases' must map phase names to objects of metric -> byte count"
    bad = next((why for name, p in phases.items() if (why := _size_problem(p, f"phases[{name!r}]"))), None)
    if bad:
        return bad
    ranks = entry.get("ranks", {})
    if not isinstance(ranks, dict) or not all(_number(k) and r and _sizes(r) for k, r in ranks.items()):
        return "'ranks' must map rank numbers (\"0\", \"1\", ...) to objects of metric -> byte count"
    for rank, figures in ranks.items():
        empty = _no_host_ram(figures, f"rank {rank}'s ")
        if empty:
            return empty
    rank_phases = entry.get("rank_phases", {})
    if not isinstance(rank_phases, dict) or not all(
        _number(k) and isinstance(by_phase, dict) and all(_sizes(p) for p in by_phase.values())
        for k, by_phase in rank_phases.items()
    ):
        return "'rank_phases' must map rank numbers to objects of phase name -> metric -> byte count"
    return None


def _number(key: Json) -> bool:
    """A key that is a number in ASCII digits ("0", "16"): a rank, a block size. str.isdigit() alone takes digits
    int() refuses ('²'), which failed the case on a traceback instead of naming the file."""
    return isinstance(key, str) and key.isascii() and key.isdigit()


def _no_host_ram(figures: JsonObject, where: str, required: bool = False) -> str | None:
    """Why a stored host RAM peak cannot be a baseline, or None: a measured process never holds 0 B, and against 0 B
    every run reads as a regression with no change to show; an entry without a gated host-RAM figure (`required`:
    the tree's, else the main process's) compares no host RAM at all and passes on nothing. A command's main
    process the tree never read (it exited within the first poll) has no figure of its own: its tree's is gated."""
    for metric in HOST_RAM:
        value = figures.get(metric)
        if value == 0 or (value is None and required and metric == "ram" and figures.get("ram_tree") is None):
            return (f"{where}{metric} is {json.dumps(value)}: no measured run holds no host RAM, so it is no baseline "
                    "(a run compared with it would read as a regression, or compare nothing)")
    return None


def _blocks_ok(blocks: object) -> bool:
    """A spread's growth per block size (model/entry.py Spread.blocks): metric -> block size -> bytes per step."""
    return isinstance(blocks, dict) and all(
        m in JUDGED_GROWTH and isinstance(by, dict)
        and all(_number(k) and int(k) >= 2 and v is not None and _is_size(v) for k, v in by.items())
        for m, by in blocks.items())


def _spread_ok(spread: Json, more: set[str]) -> bool:
    """Whether `spread` is a Spread's JSON (model/entry.py), with the keys of `more` allowed beside its own."""
    return (
        isinstance(spread, dict) and set(spread) <= {"runs", "by_metric", "growth", "blocks", *more}
        and isinstance(spread.get("runs"), int) and not isinstance(spread["runs"], bool) and spread["runs"] >= 2
        and isinstance(spread.get("by_metric", {}), dict)
        and all(m in ALL and v is not None and _is_size(v) for m, v in spread.get("by_metric", {}).items())
        and isinstance(spread.get("growth", {}), dict)
        and all(m in JUDGED_GROWTH and v is not None and _is_size(v) for m, v in spread.get("growth", {}).items())
        and _blocks_ok(spread.get("blocks", {}))
    )


def _recorded_problem(entry: JsonObject) -> str | None:
    tol = entry.get("tolerance")  # both terms, as a marker's tolerance is read (Tolerance.from_json needs both)
    if tol is not None and not (
        isinstance(tol, dict)
        and isinstance(tol.get("rel"), (int, float)) and not isinstance(tol["rel"], bool) and 0 <= tol["rel"] < 10
        and tol.get("abs") is not None and _is_size(tol["abs"])
    ):
        return f"'tolerance' is {tol!r}, expected {{'rel': 0..10, 'abs': bytes}}"
    if tol is not None and set(tol) != {"rel", "abs"}:  # a misspelt or later term: read by no code, never said
        return f"unknown key {min(set(tol) - {'rel', 'abs'})!r} in 'tolerance': it holds 'rel' and 'abs' only"
    spread = entry.get("spread")  # optional: an entry recorded over several runs (model/entry.py Spread)
    ranks = spread.get("ranks", {}) if isinstance(spread, dict) else {}  # a launch's: each rank's own
    if spread is not None and not (
        _spread_ok(spread, {"ranks"}) and isinstance(ranks, dict)
        and all(_number(k) and _spread_ok(by, set()) for k, by in ranks.items())
    ):
        return (f"'spread' is {spread!r}, expected {{'runs': 2 or more, 'by_metric': metric -> bytes, 'growth' "
                f"(optional): one of {', '.join(JUDGED_GROWTH)} -> bytes per step, 'blocks' (optional): that metric -> "
                "block size (2 or more) -> bytes per step, 'ranks' (optional): rank -> those of the rank}")
    fprint = entry.get("fingerprint", {})
    if isinstance(fprint, dict) and not _is_size(fprint.get("floor")):  # taken off host RAM as a shift: never < 0
        return f"fingerprint.floor is {fprint['floor']!r}, expected a byte count or null"
    if not isinstance(fprint, dict) or not (fprint.get("packages") is None or isinstance(fprint["packages"], str)):
        return "'fingerprint' must be an object (its 'floor' a byte count, its 'packages' a digest)"
    if not any(key in POLICY for key in fprint):
        return ("no 'fingerprint' (the setup it was recorded under: the libraries' versions, the allocator, the "
                "threads, ...): a run on another machine or setup would be compared with it as if on the same one, "
                "its differences unsaid")
    if not isinstance(entry.get("params", {}), dict):
        return "'params' must be an object"
    command = entry.get("command")
    if command is not None and not (isinstance(command, list) and all(isinstance(a, str) for a in command)):
        return f"'command' is {command!r}, expected a list of the command's arguments"
    fixes = entry.get("fixes", [])
    if not isinstance(fixes, list) or not all(isinstance(f, str) for f in fixes):
        return "'fixes' must be a list of fix names"
    for key in ("scenario", "recorded"):
        if entry.get(key) is not None and not isinstance(entry[key], str):
            return f"'{key}' must be a string"
    return None


def load(path: Path) -> JsonObject:
    """The validated content of a baseline file; an empty file structure when it does not exist."""
    path = Path(path)
    if not os.path.lexists(path):
        blocked = _not_a_folder(path.parent)
        if blocked:
            raise BaselineError(f"baselines folder {blocked}: move it away, or point --gpu-budget-baselines "
                                f"(or ini gpu_budget_baselines) at a folder")
        return {"schema": SCHEMA, "entries": {}, "packages": {}}
    data = _parsed(path, _read_bounded(path))
    validate(data, path)
    data.setdefault("packages", {})
    return data


def _not_a_folder(folder: Path) -> str | None:
    """What keeps `folder` (a baseline file's) from holding files, or None: the nearest of it and the folders above it
    that is there is a file, or a symlink to nothing (a share not mounted). Not made yet is no problem: the first write
    makes it, and until then it holds no baseline."""
    for above in (folder, *folder.parents):
        if above.is_dir():
            return None
        if os.path.lexists(above):
            link = os.path.realpath(above) if above.is_symlink() else None
            if not above.exists():
                return f"{above} is a symlink to {link}, which does not exist"
            return f"{above} is a file, not a folder" + (f" (a symlink to {link})" if link else "")
    return None


def _parsed(path: Path, text: str) -> Json:
    """The file's text as JSON, a key given twice refused; a BaselineError saying why the parser refused it. Only the
    parse is guarded here: a read refused before it (a FIFO, a huge file, not UTF-8) raised its own BaselineError,
    which a ValueError handler would otherwise wrap in a false message."""
    try:
        return strict_loads(text)
    except DuplicateKey as exc:  # a hand merge: the parser alone would keep the last and drop the first's entries
        raise BaselineError(f"baseline file {path} {exc}: read as it is, the last would replace the first and its "
                            "content be lost. Merge the two by hand into one (deleting the file and re-recording "
                            "drops the entries of one of them).") from None
    except json.JSONDecodeError as exc:
        if conflict.has_markers(text, merge_base.marker_size(path)):
            raise BaselineError(f"baseline file {path} holds git's merge conflict markers (<<<<<<< ... ======= ... "
                                f">>>>>>>): two branches both recorded entries in it. Keep both sides' entries: run "
                                f"`python -m gpu_budget baselines resolve {path}`, or edit it by hand (deleting it and "
                                f"re-recording drops one branch's baselines).") from None
        raise BaselineError(f"baseline file {path} is not valid JSON ({exc}). Fix it by hand or delete "
                            f"it and re-record with --gpu-budget-update.") from None
    except NotJson as exc:  # a hand edit: kept, and written back as such, the committed file fails every other reader
        raise BaselineError(f"baseline file {path}: {exc}.") from None
    except RecursionError:
        raise BaselineError(f"baseline file {path} nests its JSON deeper than Python's parser follows: not a "
                            "baseline file. Delete it and re-record with --gpu-budget-update.") from None
    except ValueError as exc:  # a number the parser refuses (an integer of more than 4300 digits)
        raise BaselineError(f"baseline file {path} holds a value the JSON parser refuses ({exc}). Fix it by hand "
                            "or delete it and re-record with --gpu-budget-update.") from None


def _read_bounded(path: Path) -> str:
    """The file's text, read only if it is a regular file no larger than MAX_FILE_BYTES.

    Opened non-blocking, so a FIFO cannot stall the session, and checked on the
    open descriptor, so a symlink swapped in meanwhile changes nothing.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise BaselineError(f"baseline file {path} cannot be opened: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
                    else "a socket" if stat.S_ISSOCK(info.st_mode) else "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file")
            link = f" (a symlink to {os.path.realpath(path)})" if os.path.islink(path) else ""
            raise BaselineError(f"baseline file {path}{link} is {kind}, not a regular file: refusing to read it")
        if info.st_size > MAX_FILE_BYTES:
            raise BaselineError(f"baseline file {path} is {info.st_size} bytes, over the {MAX_FILE_BYTES} a baseline "
                                f"file may hold: refusing to read it")
        chunks, left = [], MAX_FILE_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:  # grew past the limit while being read
            raise BaselineError(f"baseline file {path} is over the {MAX_FILE_BYTES} bytes a baseline file may hold")
        return _decoded(path, b"".join(chunks))
    finally:
        os.close(fd)


def _decoded(path: Path, raw: bytes) -> str:
    """The file's bytes as text: JSON is UTF-8. A byte order mark before it is read past, as RFC 8259 lets a reader:
    Windows editors and PowerShell's UTF8 encoding add one unasked, and the file was refused as "not valid JSON", to
    be deleted and re-recorded; the next write of the file leaves it out."""
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise BaselineError(f"baseline file {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def lock_path(path: Path) -> Path:
    """The lock file of a baseline file: beside it, hidden, and not a `*.json`, so nothing reads it as a baseline."""
    return path.parent / f".{path.name}.lock"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock per baseline file, on a file beside it, so any two writers of one folder exclude each other
    whatever their temp dirs. The lock file is removed by its holder on release; a waiter that wakes on a removed one
    takes the new one (the inode at the path after locking must be the one locked), so it leaves nothing behind but
    after a killed writer, and a file left then is harmless."""
    path.parent.mkdir(parents=True, exist_ok=True)
    name = lock_path(path)
    while True:
        fd = os.open(name, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                now = os.stat(name)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # its holder removed it while this one waited: lock the file now at the path
    try:
        _remove_left_temps(path)
        yield
    finally:
        try:
            with contextlib.suppress(FileNotFoundError):  # removed by hand meanwhile: the write itself stands
                os.unlink(name)
        finally:
            os.close(fd)  # closing releases the lock, after the file is gone from the path


_TEMP_TOKEN = 4  # bytes of randomness in a temp file's name (_temp_path): 8 hex digits


def _temp_path(path: Path) -> Path:
    """A fresh temp file's name for a write of `path`: beside it, hidden, and not a `*.json`."""
    return path.parent / f".{path.name}.{secrets.token_hex(_TEMP_TOKEN)}.tmp"


def _remove_left_temps(path: Path) -> None:
    """Remove the temp files of `path` that a writer killed between its write and its rename left beside it. Called
    holding the file's lock, under which no other writer of it is mid-write; another file's temp files are left."""
    left = re.compile(rf"\.{re.escape(path.name)}\.[0-9a-f]{{{2 * _TEMP_TOKEN}}}\.tmp")
    with contextlib.suppress(OSError):
        for entry in os.scandir(path.parent):
            if left.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)


def _fitting(path: Path, text: str) -> bytes:
    """The text to write, as bytes, refused where a read would refuse it (over MAX_FILE_BYTES): written, it would
    fail every case of its module in the next session. Refused before any temp file, so the file stays as it was."""
    raw = text.encode("utf-8")
    if len(raw) > MAX_FILE_BYTES:
        raise BaselineError(f"baseline file {path} would be {len(raw)} bytes once written, over the {MAX_FILE_BYTES} "
                            "bytes a baseline file may hold (a larger one is refused when read): not written, the file "
                            "left as it was. Split the test module: each module's baselines have a file of their own.")
    return raw


def _write_atomic(path: Path, data: JsonObject) -> None:
    """Write through a temp file beside `path` and rename it over; the temp file is made as any new file is, so the
    baseline follows the umask (and a folder's default ACL), where mkstemp's would be 0600."""
    raw = _fitting(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    while True:
        tmp = _temp_path(path)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileExistsError:
            continue
        break
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write(path: Path, scale: str, entries: ByKey, prune_except: set[str] | None = None,
          packages: Mapping[str, Listing] | None = None, drop_empty: bool = False, drop: AbstractSet[str] = frozenset()) -> None:
    """Write `entries` (key -> entry JSON) into the file under `scale`; with prune_except, drop that scale's other keys;
    `drop`: keys of that scale to drop (a prune's, decided on an earlier read: a key another writer added since stays).

    `packages` (digest -> package list) joins the file's map; lists no entry
    refers to any more are dropped. The file is re-read under the lock, so
    concurrent writers merge; a broken file raises BaselineError instead of
    being overwritten. `drop_empty`: a file left with no entry is removed (a
    deleted test module's), not written.
    """
    path = _through_link(Path(path))
    with _locked(path):
        contents = written(Contents.from_json(load(path)), scale, entries, prune_except, packages, drop)
        if drop_empty and not contents.total:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            return
        data = contents.to_json()
        validate(data, path)
        _write_atomic(path, data)


def _through_link(path: Path) -> Path:
    """The file a write of `path` goes to: where `path` is a symlink, the file it names (it is read through the link,
    so replacing the link with a file of its own would leave that file stale); a dangling one stays as it is, and its
    read fails naming it."""
    if not path.is_symlink() or not path.exists():
        return path
    return Path(os.path.realpath(path))


def written(contents: Contents, scale: str, entries: ByKey, prune_except: set[str] | None = None,
            packages: Mapping[str, Listing] | None = None, drop: AbstractSet[str] = frozenset()) -> Contents:
    """The file's data with `entries` written under `scale` (with prune_except, that scale's other keys dropped, and
    the keys of `drop`; a scale left empty goes), the package lists `packages` added and those no entry refers to any
    more dropped."""
    by_key = {**contents.scale(scale), **entries}
    if prune_except is not None or drop:
        by_key = {k: e for k, e in by_key.items()
                  if k in entries or (k not in drop and (prune_except is None or k in prune_except))}
    scales = {**contents.entries, scale: by_key}
    if not by_key:
        del scales[scale]
    return pruned(replace(contents, entries=scales, packages={**contents.packages, **(packages or {})}))


def pruned(contents: Contents) -> Contents:
    """The file's data without the package lists no entry refers to any more."""
    used = {Facts.from_json(e.get("fingerprint") or {}).packages for by in contents.entries.values() for e in by.values()}
    return replace(contents, packages={d: listing for d, listing in contents.packages.items() if d in used})


def conflicted(path: Path) -> bool:
    """Whether a baseline file holds git's merge conflict markers (read bounded, as any baseline file is)."""
    return conflict.has_markers(_read_bounded(Path(path)), merge_base.marker_size(Path(path)))


def resolve(path: Path, keep: str | None = None) -> conflict.Merged:
    """Rewrite a baseline file left with git's conflict markers holding both sides' entries (conflict.py).

    Each side is rebuilt and validated as a baseline file of its own (and
    the merge base, from diff3's sections or else git's index: conflict.merge); an entry both
    sides hold with other figures takes the `keep` side's ("ours" or
    "theirs"), and without one nothing is written (ConflictError naming them).
    """
    if keep not in (None, *conflict.SIDES):
        raise ValueError(f"keep={keep!r} is not one of {conflict.SIDES} (or None: refuse entries that differ)")
    path = _through_link(Path(path))
    with _locked(path):
        text = _read_bounded(path)
        size = merge_base.marker_size(path)
        if not conflict.has_markers(text, size):
            raise conflict.ConflictError(f"{path}: holds no merge conflict markers, nothing to resolve")
        sides = conflict.split(text, str(path), size)
        labels = (sides.ours_label, sides.theirs_label)
        committed = merge_base.staged(path)
        merged = _merged(path, sides if committed is None else committed, labels, keep)
        if committed is not None:  # the regions' reading: where it differs, named (an edit since the merge is not kept)
            merged = replace(merged, text_differs=_text_differs(path, sides, labels, keep, merged))
        data = pruned(merged.data).to_json()
        validate(data, path)
        _write_atomic(path, data)
    return merged


def merge_driver(base: Path, ours: Path, theirs: Path, name: str) -> conflict.Merged:
    """git's merge driver for baseline files: the three versions git wrote to temp files (`base` empty where both
    sides added the file), merged entry by entry into `ours`, which git takes as the result; ConflictError, `ours`
    left as it was, where they cannot be merged so. Without it git merges lines, and a merge it finds clean can put
    one entry's figures under another's key, or an entry under another scale, without a conflict to resolve."""
    where = Path(name)
    was, mine, other = (_read_bounded(Path(p)) for p in (base, ours, theirs))
    merged = _merged(where, merge_base.Staged(mine, other, was if was.strip() else None), conflict.SIDES, None)
    data = pruned(merged.data).to_json()
    validate(data, where)
    _write_atomic(Path(ours), data)
    return merged


def _merged(path: Path, sides: conflict.Sides | merge_base.Staged, labels: tuple[str, str],
            keep: str | None) -> conflict.Merged:
    """Both sides read and validated, merged entry by entry (with the base: diff3's sections, else git's index)."""
    ours, theirs = (_side(path, side, side_text, label) for side, side_text, label
                    in zip(conflict.SIDES, (sides.ours, sides.theirs), labels))
    base = sides.base if sides.base is not None else merge_base.from_index(path)
    return conflict.merge(ours, theirs, str(path), labels, keep, _base(path, base))


def _text_differs(path: Path, sides: conflict.Sides, labels: tuple[str, str], keep: str | None,
                  merged: conflict.Merged) -> tuple[tuple[str, str], ...]:
    """The (scale, key) whose entry the conflict regions' reading of the file gives otherwise than the sides as
    committed (`merged`): git's line merge joined one entry's key to another's figures, or the file was edited."""
    try:
        read = _merged(path, sides, labels, keep).data
    except conflict.ConflictError:
        return ()
    return tuple((scale, key) for scale in sorted({*read.entries, *merged.data.entries})
                 for key in sorted({*read.scale(scale), *merged.data.scale(scale)})
                 if read.scale(scale).get(key) != merged.data.scale(scale).get(key))


def _base(path: Path, text: str | None) -> Contents | None:
    """The merge base (diff3's base sections, or git's index), where it reads as a baseline file; None where it does
    not (no base to read, or a base git's recursive merge wrote with markers of its own): then every entry of both
    sides is kept."""
    if text is None:
        return None
    try:
        return _side(path, "base", text, "merge base")
    except conflict.ConflictError:
        return None


def _side(path: Path, side: str, text: str, label: str) -> Contents:
    """One side of a conflicted file, read and validated as a baseline file of its own."""
    data = conflict.parse_side(text, side, label, str(path))
    try:
        validate(data, Path(f"{path} ({side} side, {label})"), "Resolve the file by hand, keeping both sides' entries.")
    except BaselineError as exc:
        raise conflict.ConflictError(str(exc)) from None
    return Contents.from_json(data)
