"""The session's environments: each made (or found made) once per process, its helper started once.

A case's own environment, or a sweep's version, is made through
isolate/environment.py under the session's folder (--gpu-budget-envs, else
pytest's cache), which keeps it across runs; xdist workers share the folder
and its locks, so one makes it and the others find it. Each time this
process gets one ready, its record (what it holds, the seconds it took,
whether it was found made) goes to `records`, the JSON report's
"environments". A failure is kept too, so a second case of the same
environment fails at once with the same message, and listed there with
its error and the seconds failing took (isolate/env_failures.py remembers
it across runs; `retry`, --gpu-budget-update, tries again one remembered
before this session began).
"""

from __future__ import annotations

import atexit
import time
from collections.abc import Callable
from pathlib import Path

from gpu_budget.declare.environment import Environment
from gpu_budget.isolate import forkserver
from gpu_budget.isolate.environment import EnvironmentFailed, make
from gpu_budget.isolate.remote import Remote
from gpu_budget.model.result import EnvironmentRecord


class Environments:
    def __init__(self, root: Callable[[], Path], on_made: Callable[[EnvironmentRecord], None],
                 retry: bool = False, say: Callable[[str], None] | None = None) -> None:
        self._root, self._on_made, self._say = root, on_made, say  # say: a line on the terminal as making starts
        self._since, self._retry = time.time(), retry  # a failure remembered from now on is this session's
        self._made: dict[tuple[str, ...], EnvironmentRecord | EnvironmentFailed] = {}
        self._remotes: dict[str, Remote] = {}
        atexit.register(self.close)

    def get(self, environment: Environment) -> EnvironmentRecord:
        """The environment made; EnvironmentFailed (the same one for every case asking) where it cannot be."""
        lines = environment.lines
        if lines not in self._made:
            try:
                self._made[lines] = made = make(lines, self._root(), since=self._since, retry=self._retry,
                                                say=self._say)
            except EnvironmentFailed as exc:
                self._made[lines] = exc
                self._on_made(exc.record(lines))
            else:
                self._on_made(made)
        found = self._made[lines]
        if isinstance(found, EnvironmentFailed):
            raise found
        return found

    def remote(self, made: EnvironmentRecord) -> Remote:
        """The helper running the forkserver of this environment (started on first use, and again where it ended:
        killed mid-case by an interruption, or died)."""
        if made.python in self._remotes and not self._remotes[made.python].alive:
            self._remotes.pop(made.python).close()
        if made.python not in self._remotes:
            self._remotes[made.python] = Remote(made.python, forkserver.child_paths())
        return self._remotes[made.python]

    def close(self) -> None:
        for remote in self._remotes.values():
            remote.close()
        self._remotes.clear()
