"""What a memory-budget test declares: a Scenario (what to run) and a Budget (what it may cost).

Both are plain data. A Scenario names its code as "module:function" strings so
it crosses into a measured child as JSON, never as a pickled live object.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, cast

from gpu_budget.declare import fixes as fix_library
from gpu_budget.declare.command_line import CommandLine, placeholders
from gpu_budget.declare.env_vars import env_text
from gpu_budget.declare.environment import Environment
from gpu_budget.declare.fixes import Fix
from gpu_budget.declare.params import NEEDS_CUDA, PLANT_BYTES, PLANT_TENSOR_BYTES, Json, Params, knob_names, knobs, scale_knobs
from gpu_budget.declare.refused import refusal

if TYPE_CHECKING:
    from gpu_budget.measure.meter import Meter

__tracebackhide__ = refusal  # a refused declaration in a test fails at the test's line (refused.py)



def ref_of(func: str | Callable | None, where: str = "") -> str | None:
    """'module:qualname' for a module-level function or a class's static or class method (or the string itself, of
    that form).

    Anything else is refused, since its name would find another thing in the
    measured child, or nothing: a lambda or nested function, a bound method
    (its class's plain function, called without the instance), a
    functools.partial or a callable object ("functools:", "module:"), a
    string with no module or no name. `where` names the field ("scenario 's': run=").
    """
    if func is None:
        return func
    if isinstance(func, str):
        module, _, name = func.partition(":")
        # else the measured child fails on it, naming no field (" runners:train": "No module named ' runners'")
        if not module.strip() or not name.strip() or any(c.isspace() for c in func):
            raise ValueError(f"{where}{func!r}: expected 'module:function' (\"runners:train\", no space in it) or the "
                             "function itself")
        return func
    module, qualname = getattr(func, "__module__", None), getattr(func, "__qualname__", None)
    plain = isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname
    if not plain or not _named(func, module, qualname):
        raise ValueError(f"{where}{func!r} must be a module-level function to run in a measured child, which finds it "
                         "by its module and name")
    return f"{module}:{qualname}"


def _named(func: Callable, module: str, qualname: str) -> bool:
    """Whether `module`.`qualname` is `func` (where the module is imported here; else the child will say)."""
    obj: object = sys.modules.get(module)
    if obj is None:
        return True
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj == func


def resolve_ref(ref: str) -> Callable:
    module, _, name = ref.partition(":")
    if not module or not name:
        raise ValueError(f"bad function reference {ref!r}: expected 'module:function'")
    obj: object = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return cast("Callable", obj)


@dataclass(frozen=True)
class Scenario:
    """A short, real fine-tune to measure: a function (`run`) or a command (`command`), exactly one.

    run:      run(ctx) executes in a fresh measured child; it brackets its
              phases with ctx.meter and may return a dict of facts (trainable
              parameters, which modules got LoRA, ...) for the report.
    command:  the user's own script or CLI, unchanged (["python", "train.py", "--max_steps", "4"]):
              the measured child starts it and measures its whole process tree
              (command.py). Each argument may hold "{param}" placeholders, filled
              from the params at the scale, and "{assets}" (the prepared folder).
              A fix applies to it through its args/env (appended, set) or its params.
    cwd, env: the command's working directory (a relative one is taken from the
              pytest process's working directory) and environment variables set
              for it, with placeholders too; env wins over the gate's pins and is
              recorded in the fingerprint. Its values are text: a number or a path is
              written as its text, None or a bool is refused (declare/env_vars.py). A fix's env wins over it where both name a
              variable: the fix exists to change that value.
    prepare:  prepare(ctx) builds the on-disk assets once (a model saved with
              save_pretrained, synthetic clips) in its own unmeasured child,
              so the measured child loads them the way a user would.
    params:   the knobs (batch size, clip seconds, ...); JSON-able.
    scales:   per-scale params laid over `params`; a scale holding
              "needs_cuda": True is skipped, with the reason, on a host without CUDA
              (in `params`: every scale that does not set it False).
    fixes:    names of the remediations applied (the runner reads ctx.fixes); checked against
              the fix library when the Scenario is built: an unknown name, a conflicting pair
              or a missing companion fix is a FixError (at collection time in a memtest module).
    supports: the fixes its runner honours (names, or a user's own Fix objects, which get
              registered); the remediation search tries sets of these. Empty: any registered fix.
    ranks:    how many ranks a launcher command starts (torchrun --nproc-per-node N, accelerate
              launch --num_processes N): the case fails unless N ranks ran, is recorded in the
              fingerprint, and on CUDA needs N GPUs of its own (--gpu-budget-gpus-per-worker).
    gpus:     how many GPUs those ranks share on CUDA, where it is not one each (ranks that share
              one GPU over gloo: gpus=1); at most `ranks`.
    environment: an Environment(requirements=[...]) the case runs in, made by the gate over the running one
              (docs/declaring.md, "Its own environment"): its prepare and run (or its command) run there.
    prepared_from: the params prepare may read (model dimensions, clip lengths; a bare name is one); empty: all.
              Assets are keyed by these alone, so cases that differ only in what the run
              does (batch size, a fix's knob) share one prepared model; prepare is handed
              only these, and reading any other param is an error naming it.
    """

    name: str
    run: str | Callable | None = None
    prepare: str | Callable | None = None
    params: Mapping[str, Json] = field(default_factory=dict)
    scales: Mapping[str, Mapping[str, Json]] = field(default_factory=lambda: {"tiny": {}})
    fixes: tuple[str, ...] = ()
    supports: tuple[str | Fix, ...] = ()
    prepared_from: tuple[str, ...] = ()
    command: tuple[str, ...] | None = None
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    ranks: int = 1
    gpus: int | None = None
    environment: Environment | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():  # its baseline entry could not be written
            raise ValueError(f"scenario name={self.name!r}: expected a non-empty string: it names the case's baseline entry")
        if not self.name.isprintable() or self.name != self.name.strip():  # as measure()'s label (session.py)
            raise ValueError(f"scenario name={self.name!r}: expected one line of text with no space at either end: it "
                             "names the case's row and baseline entry")
        if self.environment is not None and not isinstance(self.environment, Environment):
            raise ValueError(f"scenario {self.name!r}: environment={self.environment!r}: expected "
                             "gpu_budget.Environment(requirements=[...]) or None")
        if not isinstance(self.ranks, int) or isinstance(self.ranks, bool) or self.ranks < 1:
            raise ValueError(f"scenario {self.name!r}: ranks={self.ranks!r}: expected a whole number >= 1")
        if self.gpus is not None and (not isinstance(self.gpus, int) or isinstance(self.gpus, bool)
                                      or not 1 <= self.gpus <= self.ranks):
            raise ValueError(f"scenario {self.name!r}: gpus={self.gpus!r}: expected a whole number from 1 to "
                             f"ranks ({self.ranks}), the GPUs its ranks share")
        if self.ranks > 1 and self.command is None:
            raise ValueError(f"scenario {self.name!r}: ranks={self.ranks} is for a command a launcher runs "
                             "(command=['torchrun', '--nproc-per-node', '2', 'train.py'])")
        if (self.run is None) == (self.command is None):
            raise ValueError(f"scenario {self.name!r}: give exactly one of run= (a function) and command= (a command line)")
        if self.command is not None:
            _command_fields(self)
        elif self.cwd is not None or self.env:
            raise ValueError(f"scenario {self.name!r}: cwd= and env= are for a command scenario")
        where = f"scenario {self.name!r}"
        object.__setattr__(self, "run", ref_of(self.run, f"{where}: run="))
        object.__setattr__(self, "prepare", ref_of(self.prepare, f"{where}: prepare="))
        object.__setattr__(self, "params", knobs(self.params, where))
        object.__setattr__(self, "scales", scale_knobs(self.scales, where))
        object.__setattr__(self, "prepared_from", knob_names(self.prepared_from, where))
        with fix_library.all_or_none():
            self._fix_fields(where)

    def _fix_fields(self, where: str) -> None:
        """supports= and fixes= resolved and checked (the fixes they hold as Fix objects registered)."""
        object.__setattr__(self, "supports", fix_library.resolve(self.supports, where))
        offered = {f.name: f for f in self.supports}
        for fix in self.supports:  # a misspelt companion, named at collection, not when a search tries the fix
            fix_library.unknown_companion(fix, offered, f"{where}: ")
        object.__setattr__(self, "fixes", tuple(dict.fromkeys(fix_library.name_of(f, where)
                                                              for f in fix_library.entries_of(self.fixes, where))))
        chosen = fix_library.validate(self.fixes, self.offered(), where=where)
        if self.command is not None:
            for fix, listed in (*((f, "") for f in chosen), *((f, ", or leave it out of supports=") for f in self.supports)):
                if not fix.applies_to_commands:
                    raise fix_library.FixError(f"{where}: fix {fix.name!r} says nothing of how it applies to a command "
                                               f"(give it args=, env= or params= that the command reads{listed})")
            for scale in self.scales:  # a placeholder naming no param fails here, at collection, not in the child
                self.command_at(scale, assets=".")
            _refuse_unread(self, chosen, where)
            _refuse_unread_plant(self, where)
        _refuse_unset(self, chosen, where)

    def offered(self) -> tuple[Fix, ...] | None:
        """The fixes this scenario's runner honours, or None: any registered fix."""
        return self.supports or None

    def with_fixes(self, *fixes: str | Fix) -> Scenario:
        """A new Scenario with these fixes applied (and their params laid over the knobs).

        A user's own Fix object is registered on the way; an unknown name, a
        conflicting pair or a missing companion fix raises FixError naming them.
        """
        with fix_library.all_or_none():
            names = [fix_library.name_of(f, f"scenario {self.name!r}") for f in fixes]
            every = fix_library.validate((*self.fixes, *names), self.offered(), where=f"scenario {self.name!r}")
        params = {k: v for fix in every if fix.name in names for k, v in fix.params.items()}
        return replace(self, fixes=(*self.fixes, *names), **self._knobs_with(params))  # one step: fixes= sets none

    def without_fixes(self, *fixes: str | Fix) -> Scenario:
        """A new Scenario without these fixes (names, or Fix objects; params a fix set stay as they are). A fix it
        does not apply is no error (the remediation search drops what it replaces); what is no fix is one: a misspelt
        name would drop nothing, and the case run with the fix it was meant to run without."""
        where = f"scenario {self.name!r}"
        names = {f.name if isinstance(f, Fix) else fix_library.get(fix_library.name_of(f, where), where).name for f in fixes}
        return replace(self, fixes=tuple(f for f in self.fixes if f not in names))

    def with_params(self, **params: Json) -> Scenario:
        """Knobs set here win at every scale (they replace per-scale values of the same name)."""
        return replace(self, **self._knobs_with(params))

    def _knobs_with(self, params: Params) -> dict[str, object]:
        """`params` and `scales` with `params` laid over them, winning at every scale."""
        scales = {name: {k: v for k, v in over.items() if k not in params} for name, over in self.scales.items()}
        return {"params": {**self.params, **params}, "scales": scales}

    @property
    def gpus_needed(self) -> int:
        """The GPUs a CUDA run of this case takes: one per rank unless its ranks share fewer."""
        return self.gpus or self.ranks

    def needs_cuda(self, scale: str) -> bool:
        """Whether the case at `scale` needs CUDA: its scale's needs_cuda, else params=' (every scale's)."""
        return bool({**self.params, **self.scales.get(scale, {})}.get(NEEDS_CUDA, False))

    def params_for(self, scale: str) -> Params:
        """The knobs at `scale`: its own values laid over `params`."""
        if scale not in self.scales:
            raise ValueError(f"scenario {self.name!r} has no scale {scale!r} (it has: {', '.join(self.scales)})")
        merged = {**self.params, **self.scales[scale]}
        merged.pop(NEEDS_CUDA, None)
        return merged

    def prepare_params(self, scale: str) -> Params:
        """The params prepare is handed: those named in prepared_from (a missing one is an error), or all."""
        params = self.params_for(scale)
        if not self.prepared_from:
            return params
        return {k: params[k] for k in self.prepared_from if k in params}  # an optional one may be unset

    def asset_key(self, scale: str) -> str:
        """Assets depend on the prepare function (its module's source too), the scale and the params prepare
        reads, not on fixes: a folder of assets kept across runs (GPU_BUDGET_ASSETS) is rebuilt when prepare changes."""
        blob = json.dumps([self.prepare, _source_digest(self.prepare), scale, self.prepare_params(scale)],
                          sort_keys=True, default=str)
        # named by the prepare function, not the scenario: two scenarios with one prepare and the same params it
        # reads (a runner and the script it stands beside) share one prepared folder
        prefix = _folder_name(self.prepare.replace(":", ".") if self.prepare else self.name)
        return f"{prefix}-{scale}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"

    def command_at(self, scale: str, assets: str) -> CommandLine:
        """The command with its fixes and placeholders applied at `scale`."""
        values = {**self.params_for(scale), "assets": assets}
        fixes = fix_library.validate(self.fixes, self.offered())
        return CommandLine.filled(self.command or (), self.cwd, self.env, fixes, values, self.ranks, f"scenario {self.name!r}")

    def command_line(self, scale: str, assets: str) -> dict[str, Json]:
        """The command at `scale` as the measured child reads it: {"argv", "cwd", "env"} (CommandLine.to_json)."""
        return self.command_at(scale, assets).to_json()

    def to_json(self, scale: str) -> dict[str, Json]:
        return {
            "name": self.name,
            "run": self.run,
            **({"command": self.command_line(scale, "{assets}")} if self.command is not None else {}),
            "prepare": self.prepare,
            "scale": scale,
            "params": self.params_for(scale),
            "prepare_params": self.prepare_params(scale),
            "fixes": list(self.fixes),
        }


def _command_fields(scenario: Scenario) -> None:
    """Store a command scenario's command as a tuple of its arguments (an iterator, map(str, ...), read once), its env
    as text and its cwd as a string; ValueError naming what is no argument, or what no process can be given (exec
    would refuse it only in the measured child, naming nothing)."""
    where, command = f"scenario {scenario.name!r}", scenario.command
    if not isinstance(command, str | bytes) and isinstance(command, Iterable):
        command = tuple(command)
    if not isinstance(command, tuple) or not command or not all(isinstance(a, str) for a in command):
        raise ValueError(f"{where}: command={command!r}: expected a non-empty list of strings, one per argument "
                         "(['python', 'train.py', '--max_steps', '4'])")
    if any("\0" in a for a in command):
        raise ValueError(f"{where}: command={command!r}: an argument holds a NUL byte, which no process can be given")
    object.__setattr__(scenario, "command", command)
    object.__setattr__(scenario, "env", env_text(scenario.env, where))
    cwd = scenario.cwd  # str(['a']) would be a folder, "" the pytest process's working folder, unsaid
    if cwd is not None and (not isinstance(cwd, str | os.PathLike) or not str(os.fspath(cwd)).strip()):
        raise ValueError(f"{where}: cwd={cwd!r}: expected a folder's path, a string or a pathlib.Path (None: the "
                         "pytest process's working folder)")
    if cwd is not None and os.fspath(cwd) != os.fspath(cwd).strip():  # " x ": a folder named so, not x
        raise ValueError(f"{where}: cwd={cwd!r}: spaces at its ends would start the command in a folder named so; "
                         f"write {os.fspath(cwd).strip()!r}")
    object.__setattr__(scenario, "cwd", None if scenario.cwd is None else os.fspath(scenario.cwd))


def _refuse_unread(scenario: Scenario, chosen: Sequence[Fix], where: str) -> None:
    """A supported or applied fix (`chosen`: those of fixes=) that only sets params neither the command (its
    arguments, cwd, env and the arguments and env of the fixes it may run with) nor prepare reads would run the
    command unchanged and be reported as a fix: refused. Without supports= any registered fix may be applied, so the
    applied ones are checked."""
    read = placeholders([*(scenario.command or ()), scenario.cwd, *scenario.env.values(),
                         *(t for fix in (*scenario.supports, *chosen) for t in (*fix.args, *fix.env.values()))])
    if scenario.prepare:
        if not scenario.prepared_from:
            return  # prepare is handed every param
        read.update(scenario.prepared_from)
    listed = (("supports=", scenario.supports), ("fixes=", () if scenario.supports else chosen))
    for field_name, fixes in listed:  # an applied fix is one of the supported ones where supports= is given
        for fix in fixes:
            if fix.params and not (fix.args or fix.env or set(fix.params) & read):
                raise fix_library.FixChangesNothing(
                    f"{where}: fix {fix.name!r} changes nothing in this command: it sets {', '.join(fix.params)}, "
                    f"which no placeholder of the command, its cwd or env reads (read it, as "
                    f"\"{{{next(iter(fix.params))}}}\", or leave the fix out of {field_name})")


def _refuse_unread_plant(scenario: Scenario, where: str) -> None:
    """A planted regression is held by a runner's measured child, outside a command's tree: a command that does not
    read it through a placeholder (its own switch) would run unchanged while its row names the params change, a plant
    that could never fail the gate. Refused, naming it."""
    read = placeholders([*(scenario.command or ()), scenario.cwd, *scenario.env.values()])
    for values in (scenario.params, *scenario.scales.values()):
        for name in (PLANT_BYTES, PLANT_TENSOR_BYTES):
            if values.get(name) and name not in read:
                raise ValueError(f"{where}: {name}={values[name]!r} plants nothing in a command: no placeholder of the "
                                 f"command, its cwd or env reads it (pass it to the script's own switch, as "
                                 f"\"{{{name}}}\", and have the script hold that many bytes)")


def _refuse_unset(scenario: Scenario, chosen: Sequence[Fix], where: str) -> None:
    """An applied fix whose params the knobs do not hold at every scale would be reported as applied while its runner
    or command ran on other values (Scenario(fixes=...) sets no params; with_fixes() lays them over the knobs, and a
    later with_params() may undo them): refused, naming the fix, the param and both values."""
    for fix in chosen:
        for scale in scenario.scales:
            knobs = scenario.params_for(scale)
            for name, value in fix.params.items():
                if knobs.get(name, _UNSET) != value:
                    held = "unset" if name not in knobs else f"{knobs[name]!r}"
                    raise fix_library.FixError(
                        f"{where}: fix {fix.name!r} sets {name}={value!r}, but its params hold {held} at scale "
                        f"{scale!r}: apply it with .with_fixes({fix.name!r}), which lays its params over the knobs "
                        f"(fixes= sets none), and set no other {name} after it")


_UNSET = object()


def _folder_name(name: str) -> str:
    """`name` as one folder's name in the assets folder: a `/`, a `..` or a name past the file system's limit would
    put a case's assets beside another's or outside the folder; such a name keeps a digest of itself."""
    safe = re.sub(r"[^\w.-]+", "_", name, flags=re.ASCII).lstrip(".")[:64]
    return safe if safe == name else f"{safe}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def _source_digest(ref: str | None) -> str:
    """A digest of the source file of the module `ref` names, found without importing it ("" when not found)."""
    if not ref:
        return ""
    try:
        spec = importlib.util.find_spec(ref.partition(":")[0])
        return hashlib.sha256(Path(spec.origin).read_bytes()).hexdigest()[:12] if spec and spec.origin else ""
    except (ImportError, ValueError, OSError):
        return ""


class UndeclaredParam(KeyError):
    """A KeyError (what a mapping raises) whose text is its message: KeyError's own quotes its one argument."""

    def __str__(self) -> str:
        return str(self.args[0])


class PrepareParams(dict[str, Json]):
    """The params a prepare function is handed: reading one it did not declare is an error, not a stale asset."""

    def __init__(self, declared: Mapping[str, Json], all_params: Mapping[str, Json], scenario: str) -> None:
        super().__init__(declared)
        self._undeclared = set(all_params) - set(declared)
        self._scenario = scenario

    def _refuse(self, key: str) -> KeyError:
        return UndeclaredParam(f"scenario {self._scenario!r}: prepare read param {key!r}, which is not in its "
                        f"prepared_from ({', '.join(sorted(self)) or 'empty'}); add it there, or assets built for "
                        f"one value would be reused for another")

    def __missing__(self, key: str) -> NoReturn:
        raise self._refuse(key) if key in self._undeclared else KeyError(key)

    def get(self, key: str, default: Json = None) -> Json:
        if key not in self and key in self._undeclared:
            raise self._refuse(key)
        return super().get(key, default)


@dataclass
class RunContext:
    """What a scenario's run/prepare function is handed inside the child."""

    scale: str
    params: Params
    fixes: tuple[str, ...]
    assets: Path
    device: str
    meter: Meter | None = None  # in measured runs; None in prepare

    def has(self, fix: str) -> bool:
        return fix in self.fixes
