"""The /proc figures of a process the gate reads: memory counters, parent and start, faults, shared pages.

One reader for the process tree (tree.py), the forkserver's poll of its child
and the exit report a gated command's processes send (autohook.py), which runs
as a process exits: this module imports nothing (collections is loaded in every
process already; dataclasses and typing would add dozens of modules to each
process of a command, tests/integration/test_command.py). So each file is
parsed here, once, into a small immutable record read by attribute: a named
tuple, with its fields' types written on it.
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False  # typing's own flag, without importing typing in every process of a gated command
if TYPE_CHECKING:
    from collections.abc import Mapping

# /proc/<pid>/status's keys, and the Status field each one is read into
_STATUS_FIELDS = {"VmHWM": "hwm", "VmRSS": "rss", "RssAnon": "rss_anon", "RssFile": "rss_file", "RssShmem": "rss_shmem"}


class Status(namedtuple("Status", ("hwm", "rss", "rss_anon", "rss_file", "rss_shmem"), defaults=(None, None, None))):
    """A process's memory counters from /proc/<pid>/status, in bytes.

    hwm: VmHWM, its peak RSS since it began or its last clear_refs reset; rss: VmRSS now; rss_anon / rss_file /
    rss_shmem: RSS's split into anonymous, file-backed and shared-memory pages (None where the kernel lists none).
    """

    __slots__ = ()
    hwm: int
    rss: int
    rss_anon: int | None
    rss_file: int | None
    rss_shmem: int | None

    def as_status_keys(self) -> dict[str, int]:
        """The figures under /proc's own key names (read_status's form)."""
        return {key: value for key, name in _STATUS_FIELDS.items() if (value := getattr(self, name)) is not None}


class Stat(namedtuple("Stat", ("ppid", "start"))):
    """A live process's parent pid and start time (/proc/<pid>/stat; the start in clock ticks since boot: with the
    pid, it tells a reused pid apart)."""

    __slots__ = ()
    ppid: int
    start: int


class Family(namedtuple("Family", ("ppid", "pgrp", "zombie"))):
    """A process's parent pid and process group, and whether it is a zombie (ended, not yet reaped): a zombie still
    names its group, which a process forking over and over keeps (lifecycle.kill_descendants)."""

    __slots__ = ()
    ppid: int
    pgrp: int
    zombie: bool


def read_family(pid: int | str) -> Family | None:
    """The parent, group and zombie state of a process, a zombie included; None when it is gone."""
    fields = _stat_fields(pid)
    try:
        return None if not fields or fields[0] == "X" else Family(int(fields[1]), int(fields[2]), fields[0] == "Z")
    except (IndexError, ValueError):
        return None


def status(pid: int | str) -> Status | None:
    """The process's memory counters; None when it is gone or a zombie (no mm left)."""
    found: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                name = _STATUS_FIELDS.get(key)
                if name is not None:
                    found[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return Status(**found) if "hwm" in found and "rss" in found else None


def read_status(pid: int | str) -> dict[str, int] | None:
    """VmHWM, VmRSS, RssAnon, RssFile, RssShmem in bytes, under /proc's key names; None when the process is gone or a
    zombie. The older form of status(), kept for the readers outside measure/ (the forkserver, the fingerprint)."""
    read = status(pid)
    return None if read is None else read.as_status_keys()


def _stat_fields(pid: int | str) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command name (state first); None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            text = fh.read()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()  # the command name may hold spaces and parentheses


def read_stat(pid: int | str) -> Stat | None:
    """The parent pid and start time of a process; None when it is gone or a zombie (it holds no memory)."""
    fields = _stat_fields(pid)
    try:
        return None if not fields or fields[0] in ("Z", "X") else Stat(int(fields[1]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def exit_signal(pid: int | str) -> int | None:
    """The signal that ended a process its parent has not reaped yet (a zombie: /proc's exit_code, the status
    waitpid would give); None while it runs, once it is reaped, after a plain exit, or where /proc does not say."""
    fields = _stat_fields(pid)
    try:
        return (int(fields[49]) & 0x7F) or None if fields and fields[0] == "Z" else None
    except (IndexError, ValueError):
        return None


def read_cmdline(pid: int | str) -> tuple[str, ...] | None:
    """A process's arguments, to name it in a message; None where it is gone or has none (a zombie)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    return tuple(arg.decode(errors="replace") for arg in raw.rstrip(b"\0").split(b"\0")) if raw else None


def read_faults(pid: int | str) -> int | None:
    """Page faults of a process so far (minor + major): a copy-on-write copy is one, so is every new page."""
    fields = _stat_fields(pid)
    try:
        return None if fields is None else int(fields[7]) + int(fields[9])
    except (IndexError, ValueError):
        return None


class Sharing(namedtuple("Sharing", ("shared", "pss_shmem"))):
    """What smaps_rollup says of a process's pages that other processes map too, in bytes.

    shared: Shared_Clean + Shared_Dirty, its resident pages another process maps too; pss_shmem: Pss_Shmem, its
    shared-memory pages (RssShmem) each divided by the number of processes mapping it (None where the kernel lists
    none): a page of its own counts in full, one mapped by n processes 1/n-th.
    """

    __slots__ = ()
    shared: int
    pss_shmem: int | None


def read_sharing(pid: int | str) -> Sharing | None:
    """The process's shared pages (smaps_rollup: a walk of its page tables); None when gone."""
    shared, pss_shmem = 0, None
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith(("Shared_Clean:", "Shared_Dirty:")):
                    shared += int(line.split()[1]) * 1024
                elif line.startswith("Pss_Shmem:"):
                    pss_shmem = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return Sharing(shared, pss_shmem)


def read_shared(pid: int | str) -> int | None:
    """Bytes of the process's resident pages that another process maps too (smaps_rollup); None when gone."""
    sharing = read_sharing(pid)
    return None if sharing is None else sharing.shared


def reset_hwm(pid: int | str) -> bool:
    """Reset a process's VmHWM to its current RSS (same uid: our own descendants)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


# what a launcher sets beside RANK (torchrun all of them, so accelerate launch too; deepspeed's the first five): a
# process holding each one as the command was started with got its RANK from there, not from a launcher
LAUNCH_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE", "GROUP_RANK",
               "TORCHELASTIC_RUN_ID")


def launch_vars(environ: Mapping[str, str]) -> dict[str, str]:
    """The launch variables (LAUNCH_VARS) an environment holds."""
    return {name: environ[name] for name in LAUNCH_VARS if name in environ}


def read_environ(pid: int | str) -> dict[str, str] | None:
    """The environment a process was exec'd with; None when it is gone or reads empty (a process under exec reads
    so until its new stack holds its environment)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    environ = dict(entry.decode(errors="replace").partition("=")[::2] for entry in data.split(b"\0") if b"=" in entry)
    return environ or None


def rank_in(environ: Mapping[str, str], inherited: Mapping[str, str] | None = None) -> int | None:
    """The RANK a launcher (torchrun, accelerate launch) set in `environ`; None when it has none, or when it holds
    every launch variable as `inherited` (those the command was started with: a RANK the session ran under, passed
    down unchanged through a shell that runs the launcher)."""
    found = launch_vars(environ)
    if "RANK" not in found or (inherited is not None and found == dict(inherited)):
        return None
    try:
        return int(found["RANK"])
    except ValueError:
        return None


def attempt_in(environ: Mapping[str, str] | None) -> int | None:
    """Which attempt of an elastic launch (torchrun, accelerate launch) a rank's process belongs to: its
    TORCHELASTIC_RESTART_COUNT, 0 in a launch's first attempt, so a rank's second process of count 0 is a new launch
    (a command that runs one launch after another), not a restart; None where it holds none."""
    try:
        return int((environ or {})["TORCHELASTIC_RESTART_COUNT"])
    except (KeyError, ValueError):
        return None


def forked_not_execd(pid: int | str) -> bool:
    """Whether a process was forked and has not exec'd since (its environ is still its parent's)."""
    fields = _stat_fields(pid)
    try:
        return fields is not None and bool(int(fields[6]) & 0x40)  # PF_FORKNOEXEC
    except (IndexError, ValueError):
        return False
