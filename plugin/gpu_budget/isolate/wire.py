"""What a process of a command case says over the mark socket (script.send, autohook.py), read once into a Message.

One JSON line a message; the kind is the key it holds ("phase", "exit",
"failed", "group", "accelerate", "card", "card_failed"). One of no kind says only that its process runs the hook
(the command's own, as it starts). A line that is no JSON object is an empty message: the process is answered, and
nothing is taken from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


def _int(value: object) -> int | None:
    return value if isinstance(value, int) else None


@dataclass(frozen=True)
class Message:
    """One message; the fields of the kinds it is not of stay None."""

    pid: int | None = None
    rank: int | None = None  # the launcher's RANK of the process that sent it
    phase: str | None = None  # a phase mark: the phase that begins
    step: int | None = None  # ... and the optimizer step it is
    gap: bool = False  # ... the run after a block (script.Phase), kept where it adds (Meter.start's gap)
    exit: int | None = None  # an exit report: the process's VmHWM since the tree's last read
    shared: int | None = None  # ... and its shared pages
    rss: int | None = None  # ... its RSS as it exits
    shmem: int | None = None  # ... and its shared-memory pages (RssShmem) then
    file: int | None = None  # ... and its file pages (RssFile) then
    own: bool = False  # ... of a rank's own process (not a worker it started)
    failed: str | None = None  # an uncaught exception, as text
    oom: bool = False  # ... an out-of-memory error
    group: int | None = None  # the world size of the process group a rank joined (0: imported torch.distributed)
    backend: str | None = None  # ... and its backend
    accelerate: str | None = None  # accelerate's distributed type in this rank
    processes: int = 0  # ... and how many processes it trains with
    cuda: Mapping[str, int] | None = None  # the GPU figures of the phase this mark (or exit) closes
    gpu: str | None = None  # the NVML id of the GPU the process uses
    card: str | None = None  # the card's cap this process runs under (card_cap.Capped.note)
    card_failed: str | None = None  # ... or why the cap could not be applied in it

    @property
    def exited_own(self) -> bool:
        """An exit report of a rank's own process."""
        return self.exit is not None and self.own

    @classmethod
    def from_json(cls, data: object) -> Message:
        if not isinstance(data, dict):
            return cls()
        cuda, gpu, backend = data.get("cuda"), data.get("gpu"), data.get("backend")
        return cls(
            pid=_int(data.get("pid")), rank=_int(data.get("rank")),
            phase=str(data["phase"]) if "phase" in data else None, step=data.get("step"), gap=bool(data.get("gap")),
            exit=int(data["exit"]) if "exit" in data else None, shared=data.get("shared"), own=bool(data.get("own")),
            rss=_int(data.get("rss")), shmem=_int(data.get("shmem")), file=_int(data.get("file")),
            failed=str(data["failed"]) if "failed" in data else None, oom=bool(data.get("oom")),
            group=int(data["group"]) if "group" in data else None, backend=str(backend) if backend else None,
            accelerate=str(data["accelerate"]) if "accelerate" in data else None,
            processes=int(data.get("processes", 0)) if "accelerate" in data else 0,
            cuda=cuda if isinstance(cuda, dict) else None, gpu=str(gpu) if gpu else None,
            card=str(data["card"]) if "card" in data else None,
            card_failed=str(data["card_failed"]) if "card_failed" in data else None)
