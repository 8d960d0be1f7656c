"""What the parent asks of a measured child, and how the child ended, as typed records (events.py holds what it says).

The parent builds a ChildRequest once; multiprocessing pickles it into the
child as it is, so nothing is written as JSON inside one session process.
JSON (`to_json` / `from_json`) only where a record crosses to a helper of
another environment (remote.py), and for a scenario handed in as its JSON
(Scenario.to_json), read once here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, TypeVar

from gpu_budget.declare import fixes as fix_library
from gpu_budget.declare.command_line import CommandLine
from gpu_budget.declare.params import PLANT_BYTES, PLANT_TENSOR_BYTES, Json, Params
from gpu_budget.isolate import program
from gpu_budget.model.card import Card
from gpu_budget.model.result import Measurement

if TYPE_CHECKING:
    from gpu_budget.declare.scenario import Scenario

Mode = Literal["probe", "prepare", "measure"]
ASSETS = "{assets}"  # the placeholder a command line holds for its prepared folder
F = TypeVar("F", str, list, dict, None)


@dataclass(frozen=True)
class SnapshotRequest:
    """A recording run: the child records the CUDA allocator's history and dumps a memory snapshot to `path`."""

    path: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path}

    @classmethod
    def from_json(cls, data: Mapping[str, str]) -> SnapshotRequest:
        return cls(str(data["path"]))



def fill_assets(value: F, assets: str) -> F:
    """`value` (a command line's argument, list of them, cwd or env) with "{assets}" filled in every string."""
    if isinstance(value, str):
        return value.replace(ASSETS, assets)
    if isinstance(value, list):
        return [fill_assets(v, assets) for v in value]
    if isinstance(value, dict):
        return {k: fill_assets(v, assets) for k, v in value.items()}
    return value


def with_assets(line: CommandLine, assets: str) -> CommandLine:
    """A command line with "{assets}" filled in every argument, the cwd and the env."""
    return replace(line, argv=tuple(fill_assets(list(line.argv), assets)), cwd=fill_assets(line.cwd, assets),
                   env=fill_assets(dict(line.env), assets))


@dataclass(frozen=True)
class ScenarioJob:
    """A scenario as its child reads it: at one scale, its params resolved, its command line filled but for "{assets}"."""

    name: str
    scale: str
    params: Params  # handed to run(ctx) as they are
    prepare_params: Params  # the ones prepare(ctx) may read
    fixes: tuple[str, ...] = ()
    run: str | None = None  # "module:function"
    prepare: str | None = None
    command: CommandLine | None = None
    plant_bytes: int = 0  # the planted regressions' params (PLANT_BYTES)
    plant_tensor_bytes: int = 0
    # each fix's params (the knobs it sets), to tell a fix its runner never read (declare/fix_reads.py); None: not told
    fix_params: Mapping[str, tuple[str, ...]] | None = None

    @classmethod
    def of(cls, scenario: Scenario, scale: str) -> ScenarioJob:
        params = scenario.params_for(scale)
        return cls(scenario.name, scale, params, scenario.prepare_params(scale), tuple(scenario.fixes), scenario.run,
                   scenario.prepare, scenario.command_at(scale, ASSETS) if scenario.command is not None else None,
                   params.get(PLANT_BYTES, 0), params.get(PLANT_TENSOR_BYTES, 0),
                   {name: tuple(sorted(fix_library.get(name).params)) for name in scenario.fixes})

    def in_environment(self, python: str, lays: str = "", this: str = sys.executable) -> ScenarioJob:
        """This job with its command's program the environment's (`python` its interpreter, `lays` what it lays
        over): program.OutsideEnvironment where the command would start another interpreter."""
        if self.command is None or not self.command.argv:
            return self
        line = self.command
        argv = program.in_environment(line.argv, python, lays or "the environment's packages", this,
                                      line.env.get("PATH"), line.cwd)
        return replace(self, command=replace(line, argv=argv))

    def to_json(self) -> dict[str, Json]:
        return {"name": self.name, "run": self.run,
                **({"command": self.command.to_json()} if self.command is not None else {}),
                "prepare": self.prepare, "scale": self.scale, "params": self.params,
                "prepare_params": self.prepare_params, "fixes": list(self.fixes),
                **({"fix_params": {k: list(v) for k, v in self.fix_params.items()}} if self.fix_params is not None else {})}

    @classmethod
    def from_json(cls, data: Mapping[str, Json]) -> ScenarioJob:
        params = data["params"]
        line = data.get("command")
        command = (CommandLine(tuple(line["argv"]), line.get("cwd"), dict(line.get("env") or {}),
                               int(line.get("ranks", 1))) if line else None)
        fix_params = data.get("fix_params")
        return cls(data["name"], data["scale"], params, data.get("prepare_params", params), tuple(data["fixes"]),
                   data.get("run"), data.get("prepare"), command,
                   params.get(PLANT_BYTES, 0), params.get(PLANT_TENSOR_BYTES, 0),
                   {k: tuple(v) for k, v in fix_params.items()} if fix_params is not None else None)

    @classmethod
    def coerce(cls, value: ScenarioJob | Mapping[str, Json]) -> ScenarioJob:
        """The job, from itself or from its JSON (Scenario.to_json's)."""
        return value if isinstance(value, ScenarioJob) else cls.from_json(value)


@dataclass(frozen=True)
class ChildRequest:
    """What one child is to do: probe the device, prepare a scenario's assets, or measure the scenario."""

    mode: Mode
    threads: int
    scenario: ScenarioJob | None = None  # None for a probe
    assets: str | None = None
    snapshot: SnapshotRequest | None = None
    malloc: str = "steady"
    tensors: bool = True  # count a CPU run's live tensor bytes
    device: str | None = None  # "cpu": the child does not see the GPU
    preload: tuple[str, ...] = ()  # a probe's: the modules the forkserver was asked to preload
    card: Card | None = None  # on CUDA, the measured processes run as on this card (measure/card_cap.py)
    # a command's: the folder its mark socket lives in, made and removed by the parent (forkserver.run_child), so it
    # goes however the child ends (killed on Ctrl-C, SIGTERM or a timeout)
    sockets: str | None = None
    # the environment it runs with, as the session has it when it asks (forkserver.children_environ); None: the
    # forkserver's, which is the session's as it was when the forkserver started
    environ: Mapping[str, str] | None = None

    @property
    def label(self) -> str:
        """The child process's name: its scenario's, or its mode."""
        return self.scenario.name if self.scenario is not None else self.mode

    @property
    def runs_command(self) -> bool:
        """Whether the child measures a command (its processes mark phases over a Unix socket)."""
        return self.mode == "measure" and self.scenario is not None and self.scenario.command is not None


@dataclass(frozen=True)
class ChildEnding:
    """How a child's process ended, as its parent saw it."""

    exitcode: int | None
    timed_out: bool
    wall_seconds: float
    polled_ram_peak: int | None = None  # the highest VmHWM the parent read while it waited
    forkserver_lost: bool = False  # its forkserver died while it ran (multiprocessing then says 255): it was ended
    stderr_tail: str | None = None  # a command's stderr as it stood where the child was stopped (a timeout, a kill)
    stopped_by: str | None = None  # the exception raised into the parent's wait that stopped it (stopped_wait.py)
    pipe_holders: tuple[str, ...] = ()  # a timed-out function case's processes writing to a pipe it read (named)

    @property
    def killed(self) -> bool:
        return (self.exitcode or 0) < 0


# runs a scenario in a measured child: (scenario, snapshot request or None) -> Measurement
RunChild = Callable[["Scenario", "SnapshotRequest | None"], Measurement]
