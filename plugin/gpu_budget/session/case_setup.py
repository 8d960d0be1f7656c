"""A case's stored baseline, and the fingerprint its entry records: the session's, with what the case adds.

A command case adds the environment its command runs under; a launcher case
its ranks and launcher; a case in an environment of its own the versions it
lays over the running ones. How this run's setup relates to the baseline's is
judge/fingerprint.py's `between`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from gpu_budget.declare.marks import BudgetMark
from gpu_budget.declare.scenario import Scenario
from gpu_budget.isolate import command
from gpu_budget.judge import files, fingerprint
from gpu_budget.judge.store import BaselineStore
from gpu_budget.model.case_id import CaseId
from gpu_budget.model.entry import Entry
from gpu_budget.model.hardware import Hardware
from gpu_budget.model.result import EnvironmentRecord
from gpu_budget.model.setup import FOREIGN, Fact, Setup
from gpu_budget.session.children import malloc_mode
from gpu_budget.session.options import Options


@dataclass(frozen=True)
class Baseline:
    """What the store holds for a case: its file, its entry (None: none recorded) or why the file could not be read,
    the fingerprint an entry of this run would record, and how this setup relates to the entry's."""

    path: Path
    entry: Entry | None
    broken: str | None
    fingerprint: dict[str, Fact]
    setup: Setup


def fingerprint_for(hardware: Hardware, scenario: Scenario, malloc: str, where: str = "", device: str | None = None,
                    environment: EnvironmentRecord | None = None, root: Path | None = None,
                    card: str | None = None) -> dict[str, Fact]:
    """The fingerprint a baseline entry of this case stores: the session's, with the case's allocator mode and device,
    and the card it runs as on (`card`, its label; None: none, the GPU's own memory: an entry records either);
    a command case adds the environment its command runs under (the pins, and the scenario's own env, which wins,
    a path in it under `root`, the test file's project root, written from there: another checkout of the project
    records the same);
    a case in an environment of its own, the versions that environment lays over the running ones."""
    fprint = dict(hardware.facts)
    if environment is not None:
        fprint["environment"] = environment.described or None
        fprint.update({k: v for k, v in environment.overlay.items() if k in fingerprint.LIBRARY_PACKAGES})
    mode = malloc_mode(scenario, malloc, where)
    if scenario.command is not None:
        env = command.recorded_env(1 if hardware.threads is None else hardware.threads, mode, dict(scenario.env))
        fprint["command_env"] = {k: _from_root(v, root) for k, v in env.items()} if root else env
    if scenario.ranks > 1:
        argv = scenario.command
        fprint["ranks"] = scenario.ranks
        fprint["launcher"] = argv[2] if len(argv) > 2 and argv[1] == "-m" else os.path.basename(argv[0])
    return {**fprint, "malloc": mode, "card": card, **({"device": device} if device else {})}


def stored(case: CaseId, scenario: Scenario, namesakes: tuple[str, ...], mark: BudgetMark, options: Options,
           hardware: Hardware, store: BaselineStore, environment: EnvironmentRecord | None = None) -> Baseline:
    """The case's stored baseline (found with the namesake rule: `namesakes`, the session's other test files of its
    module's stem) and how this run's setup relates to it."""
    found = store.lookup(case, options.scale, namesakes)
    baseline = found.entry
    root = files.project_root(Path(case.module).resolve().parent) if scenario.env else None
    fprint = fingerprint_for(hardware, scenario, options.malloc, case.nodeid, mark.device, environment, root,
                             ran_as_on(mark, key=True))
    setup = fingerprint.between(baseline.fingerprint if baseline else None, fprint, found.packages,
                                store.package_versions)
    preloads = baseline is not None and \
        fingerprint.Facts.from_json(baseline.fingerprint).preload != fingerprint.Facts.from_json(fprint).preload
    if preloads and scenario.command is not None:
        # A command's interpreter imports its libraries afresh: the CPU model, the kernel and the packages installed
        # move its footprint as they move the measuring child's floor, so that shift comes off its figure too; the
        # preload list moves the child's floor alone, so across preload lists nothing is taken off.
        setup = replace(setup, floor_shift=0, floor_moved=False)
    elif preloads and setup.floor_moved:
        # A function case imports itself what the forkserver no longer preloads (or the forkserver's preload holds
        # what it never imports): its peak does not move with the floor, by an amount no fingerprint says, so its host
        # RAM is not compared (taking the shift off read a regression as large as the shift)
        setup = replace(setup, policy=FOREIGN)
    return Baseline(found.path, baseline, found.broken, fprint, setup)


PYTHON = "<python>"  # a command's argument that is the interpreter running the session, as its entry keeps it


def recorded_command(case: CaseId, scenario: Scenario) -> tuple[str, ...] | None:
    """A command case's arguments as its entry keeps them (compare.command_note), a path under the test file's project
    root written from there, as its env is, and the session's own interpreter (`[sys.executable, "train.py"]`) as
    PYTHON: another checkout of the project, or a runner whose venv lies elsewhere, records the same."""
    if scenario.command is None:
        return None
    root = files.project_root(Path(case.module).resolve().parent)
    return tuple(PYTHON if a == sys.executable else _from_root(a, root) if root else a for a in scenario.command)


def ran_as_on(mark: BudgetMark, key: bool = False) -> str | None:
    """The card a measured CUDA case runs as on: its label for its row, its key (one for every spelling of the card)
    for its fingerprint; on a CPU a card caps nothing."""
    if mark.card is None or mark.device != "cuda":
        return None
    return mark.card.key if key else mark.card.label


def _from_root(value: str, root: Path) -> str:
    """An environment value with each of its paths under `root` written as "<project>/..." (a PYTHONPATH's parts)."""
    parts = []
    for part in value.split(os.pathsep):
        path = Path(part)
        parts.append(f"<project>/{path.relative_to(root).as_posix()}" if path.is_absolute() and
                     path.is_relative_to(root) else part)
    return os.pathsep.join(parts)
