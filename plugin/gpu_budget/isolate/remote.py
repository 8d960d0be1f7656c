"""A case in its own environment: a helper process of that environment's interpreter runs the forkserver there.

A function case runs in a child forked from a forkserver that preloaded
torch and transformers. In another environment the same holds: the helper,
started once per environment and session process (`python -m
gpu_budget.isolate.remote` with the environment's interpreter), starts its
own forkserver with the session's preload, so its children import the
environment's versions and are measured exactly as the running
environment's are (the same preload, floor and pins). A command case goes
the same way: its measuring child comes from the helper's forkserver, with
the environment's bin folder first on PATH (a command's program becomes the
environment's, or is refused, in isolate/program.py).

The helper imports no torch itself (the plugin stays lazy) and takes one
JSON request a line on stdin, answering one line on stdout; it ends when its
stdin closes, and its forkserver with it. Its own stderr is a temporary file,
read for the message of a helper that died; what a case prints goes where the
session's own children print (its test's captured output, the terminal under
-s): the helper is handed copies of the session's descriptors 1 and 2.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gpu_budget.declare.params import Json
from gpu_budget.isolate import building, forkserver, lifecycle, stopped_wait
from gpu_budget.isolate.environment import BEHIND, split_paths
from gpu_budget.isolate.forkserver import DEFAULT_PRELOAD
from gpu_budget.isolate.protocol import ScenarioJob, SnapshotRequest
from gpu_budget.model.card import Card
from gpu_budget.model.result import Measurement
from gpu_budget.requires import MissingDependency

HELPER_SESSION_PATHS = "GPU_BUDGET_HELPER_SESSION_PATHS"  # the session's folders, its children's alone (serve)
HELPER_PYTHONPATH = "GPU_BUDGET_HELPER_PYTHONPATH"  # the PYTHONPATH the session was started with, less a kit's folders
START_SECONDS = 300  # a helper's forkserver start (the preload's imports) on top of a request's own timeout


@dataclass(frozen=True)
class Call:
    """One request to the helper: forkserver.measure ("measure") or forkserver.prepare_assets ("prepare"), with its
    arguments."""

    op: str
    scenario: ScenarioJob
    assets: str
    timeout: float
    threads: int
    preload: tuple[str, ...] = DEFAULT_PRELOAD
    dispatch_mode: str = "avx2"
    device: str | None = None
    snapshot: SnapshotRequest | None = None  # measure's only, and the three below
    malloc: str = "steady"
    tensors: bool = True
    card: Card | None = None

    def to_json(self) -> dict[str, Json]:
        return {"op": self.op, "scenario": self.scenario.to_json(), "assets": self.assets, "timeout": self.timeout,
                "threads": self.threads, "preload": list(self.preload), "dispatch_mode": self.dispatch_mode,
                "device": self.device, "snapshot": self.snapshot.to_json() if self.snapshot is not None else None,
                "malloc": self.malloc, "tensors": self.tensors,
                "card": self.card.to_env() if self.card is not None else None}

    @classmethod
    def from_json(cls, data: Mapping[str, Json]) -> Call:
        snapshot = data["snapshot"]
        return cls(data["op"], ScenarioJob.from_json(data["scenario"]), data["assets"], data["timeout"], data["threads"],
                   tuple(data["preload"]), data["dispatch_mode"], data["device"],
                   SnapshotRequest.from_json(snapshot) if snapshot is not None else None, data["malloc"], data["tensors"],
                   Card.from_env(data["card"]) if data.get("card") else None)


class RemoteFailed(RuntimeError):
    """The helper died or did not answer: the case fails with this message."""


class Remote:
    """The session's side of one environment's helper."""

    def __init__(self, python: str, paths: list[str]) -> None:
        self.python = python
        bin_dir = str(Path(python).parent)
        given = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        first, behind = split_paths([*paths, *given])  # a kit's releases behind the environment's (environment.BEHIND)
        # the session's folders (pytest's: memtests/) and the PYTHONPATH it was started with, told apart, so a command
        # gets the latter alone, as outside an environment (command.SESSION_PATHS)
        env = {**os.environ, "VIRTUAL_ENV": str(Path(bin_dir).parent),
               "PATH": os.pathsep.join(filter(None, [bin_dir, os.environ.get("PATH")])),
               "PYTHONPATH": os.pathsep.join(first), BEHIND: os.pathsep.join(behind),
               HELPER_SESSION_PATHS: os.pathsep.join(split_paths(paths)[0]),
               HELPER_PYTHONPATH: os.pathsep.join(split_paths(given)[0])}
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115  kept for the message of a helper that died
        streams = _session_streams()
        try:
            self.proc = subprocess.Popen([python, "-m", "gpu_budget.isolate.remote", *map(str, streams)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, env=env,
                                         text=True, bufsize=1, pass_fds=streams)
        finally:
            for fd in streams:
                os.close(fd)

    def call(self, request: Call) -> dict[str, Json]:
        """Send one request and wait for its answer (at most its timeout plus the helper's start)."""
        wait = request.timeout
        try:
            self.proc.stdin.write(json.dumps(request.to_json()) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise RemoteFailed(self._died()) from None
        try:
            answered = self._answered(wait + START_SECONDS)
        except BaseException as exc:  # cut off mid-case (a Ctrl-C, a plugin's timeout): its case ends now, and its
            self.kill()  # answer never reaches the next request
            if stopped_wait.stops_wait(exc):  # a test's own timeout: the case still gets its row (nothing measured)
                raise stopped_wait.WaitStopped(exc) from exc
            raise
        if not answered:
            self.close()
            raise RemoteFailed(f"the helper of {self.python} did not answer in {wait + START_SECONDS:.0f} s")
        line = self.proc.stdout.readline()
        if not line:
            raise RemoteFailed(self._died())
        answer = json.loads(line)
        if "missing" in answer:
            raise MissingDependency(answer["missing"])
        if "error" in answer:
            raise RemoteFailed(f"in the environment of {self.python}: {answer['error']}")
        return answer

    def measure(self, scenario: ScenarioJob | Mapping[str, Json], assets: Path, timeout: float, threads: int,
                preload: tuple[str, ...] = DEFAULT_PRELOAD, snapshot: SnapshotRequest | None = None,
                malloc: str = "steady", dispatch_mode: str = "avx2", tensors: bool = True,
                device: str | None = None, card: Card | None = None) -> Measurement:
        """forkserver.measure, in the helper's environment."""
        answer = self.call(Call("measure", ScenarioJob.coerce(scenario), str(assets), timeout, threads, tuple(preload),
                                dispatch_mode, device, snapshot, malloc, tensors, card))
        return Measurement.from_json(answer["measurement"])

    def prepare_assets(self, scenario: ScenarioJob | Mapping[str, Json], assets: Path, timeout: float, threads: int,
                       preload: tuple[str, ...] = DEFAULT_PRELOAD, dispatch_mode: str = "avx2",
                       device: str | None = None, say: Callable[[str], None] | None = None) -> None:
        """forkserver.prepare_assets, in the helper's environment; its wait on another process's build is said here,
        where it is seen as the call starts (the helper's stderr reaches no terminal)."""
        job = ScenarioJob.coerce(scenario)
        if say is not None and not building.built(str(assets)):
            held, pid = building.builder(str(assets))
            if held:
                say(forkserver.waiting_line(job.name, assets, pid))
        self.call(Call("prepare", job, str(assets), timeout, threads, tuple(preload), dispatch_mode, device))

    def _answered(self, seconds: float) -> bool:
        with selectors.DefaultSelector() as selector:
            selector.register(self.proc.stdout, selectors.EVENT_READ)
            return bool(selector.select(seconds))

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """End the helper now, mid-case or not: its forkserver and the case it runs end with it (lifecycle.adopt)."""
        if self.alive:
            self.proc.kill()
            self.proc.wait()
        self.close()

    def _died(self) -> str:
        self.proc.wait(timeout=30)
        self.stderr.seek(0)
        tail = "\n".join(self.stderr.read().decode(errors="replace").strip().splitlines()[-15:])
        return f"the helper of {self.python} exited with {self.proc.returncode}" + (f":\n{tail}" if tail else "")

    def close(self) -> None:
        """Its stdin closed: the helper ends, and its forkserver with it. Every pipe to it is closed here, none left
        to the collector (a ResourceWarning, an error under a project's `filterwarnings = ["error"]`)."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout, self.stderr):
            try:
                pipe.close()
            except OSError:  # a dead helper's stdin, with a request still in its buffer
                pass


def _session_streams() -> tuple[int, ...]:
    """Copies of this process's descriptors 1 and 2, for the helper's cases to print on: under pytest's capture its
    files (so a failing test's report shows the case's output), under -s the terminal. None where one is closed."""
    streams: list[int] = []
    try:
        for fd in (1, 2):
            streams.append(os.dup(fd))
    except OSError:
        for fd in streams:
            os.close(fd)
        return ()
    return tuple(streams)


@contextmanager
def _printing_to(streams: Sequence[int]) -> Iterator[None]:
    """Descriptors 1 and 2 pointed at the session's while a request is answered: the forkserver it starts (or starts
    again) inherits them, and so does every child it forks; the helper's own stderr is its temporary file again
    after."""
    if not streams:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    os.dup2(streams[0], 1)
    os.dup2(streams[1], 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)


def _answer(call: Call) -> dict[str, Json]:
    try:
        if call.op == "measure":
            return {"measurement": forkserver.measure(
                call.scenario, Path(call.assets), call.timeout, call.threads, call.preload, call.snapshot, call.malloc,
                call.dispatch_mode, call.tensors, call.device, call.card).to_json()}
        if call.op == "prepare":
            forkserver.prepare_assets(call.scenario, Path(call.assets), call.timeout, call.threads, call.preload,
                                      call.dispatch_mode, call.device)
            return {"ok": True}
        return {"error": f"unknown request {call.op!r}"}
    except MissingDependency as exc:
        return {"missing": str(exc)}
    except Exception as exc:  # noqa: BLE001  told to the session, which fails the case with it
        return {"error": f"{type(exc).__name__}: {exc}" if isinstance(exc, RuntimeError) else traceback.format_exc()}


def serve() -> None:
    """Answer requests until stdin closes; the folders the children need are the session's (HELPER_SESSION_PATHS),
    so the forkserver adds none of this interpreter's own (the running environment's site folders stay behind the
    environment's), and names them as the session's: a command's PYTHONPATH is the one the session was started with
    (HELPER_PYTHONPATH), without pytest's folders, as outside an environment.

    The answers go on a copy of stdout's descriptor; descriptor 1 itself is pointed at stderr, and at the session's
    while a request is answered (the descriptors given as arguments), so what a child prints (the Trainer prints its
    metrics) never lands among the answers."""
    streams = [int(arg) for arg in sys.argv[1:3]]
    lifecycle.adopt()  # a session SIGKILLed mid-case never closes stdin: the helper and its children end with it
    forkserver.GIVEN_PATHS = [p for p in os.environ.pop(HELPER_SESSION_PATHS, "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.environ.pop(HELPER_PYTHONPATH, "")
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    for line in sys.stdin:
        if line.strip():
            call = Call.from_json(json.loads(line))
            with _printing_to(streams):
                answer = _answer(call)
            channel.write(json.dumps(answer) + "\n")
            channel.flush()


if __name__ == "__main__":
    serve()
