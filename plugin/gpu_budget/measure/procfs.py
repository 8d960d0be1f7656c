"""The /proc figures of a process the gate reads: memory counters, parent and start, faults, shared pages.

One reader for the process tree (tree.py), the forkserver's poll of its child
and the exit report a gated command's processes send (autohook.py), which runs
as a process exits: this module imports nothing.
"""

from __future__ import annotations

_STATUS_KEYS = ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem")


def read_status(pid: int | str) -> dict[str, int] | None:
    """VmHWM, VmRSS, RssAnon, RssFile, RssShmem in bytes; None when the process is gone or a zombie (no mm left)."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                if key in _STATUS_KEYS:
                    out[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return out if "VmHWM" in out else None


def _stat_fields(pid: int | str) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command name (state first); None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            text = fh.read()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()  # the command name may hold spaces and parentheses


def read_stat(pid: int | str) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of a process; None when it is gone or a zombie (it holds no memory)."""
    fields = _stat_fields(pid)
    try:
        return None if not fields or fields[0] in ("Z", "X") else (int(fields[1]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def read_faults(pid: int | str) -> int | None:
    """Page faults of a process so far (minor + major): a copy-on-write copy is one, so is every new page."""
    fields = _stat_fields(pid)
    try:
        return None if fields is None else int(fields[7]) + int(fields[9])
    except (IndexError, ValueError):
        return None


def read_shared(pid: int | str) -> int | None:
    """Bytes of the process's resident pages that another process maps too (smaps_rollup); None when gone."""
    shared = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith(("Shared_Clean:", "Shared_Dirty:")):
                    shared += int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return shared


def reset_hwm(pid: int | str) -> bool:
    """Reset a process's VmHWM to its current RSS (same uid: our own descendants)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def read_rank(pid: int | str) -> int | None:
    """The RANK a launcher (torchrun, accelerate launch) gave a process in the environment it was exec'd with;
    None when it has none, or is gone."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    for entry in data.split(b"\0"):
        if entry.startswith(b"RANK="):
            try:
                return int(entry[5:])
            except ValueError:
                return None
    return None


def forked_not_execd(pid: int | str) -> bool:
    """Whether a process was forked and has not exec'd since (its environ is still its parent's)."""
    fields = _stat_fields(pid)
    try:
        return fields is not None and bool(int(fields[6]) & 0x40)  # PF_FORKNOEXEC
    except (IndexError, ValueError):
        return False
