"""The gate's options, each defined once: a field of `Options` whose metadata is its `Option`.

One definition holds an option's name (its ini value; the flag is the same
with dashes), parser, default and help. From it come the flag and the ini
value (`register`), the value a session reads (`Options.from_config`: the
command line wins over the ini file, the ini file over the default, as
pytest-memray's `value_or_ini`) and its row of docs/options.md (`document`).
A value derived from the one given (a path anchored at the rootdir, an extra
that must be installed) is the definition's `resolve` hook, so no reader
special-cases an option by name. A bad value, from either place, is a usage
error naming where it came from and the value.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Generic, Literal, TypeVar

import pytest

from gpu_budget.declare import sweep as sweeps
from gpu_budget.isolate import dispatch, forkserver, remote
from gpu_budget.judge.files import replaced_baseline
from gpu_budget.model.budget import SCALES
from gpu_budget.report.outputs import replaced_source
from gpu_budget.search.explore import DEFAULT_EXAMPLES
from gpu_budget.search.remediate import DEFAULT_MAX_RUNS
from gpu_budget.session import extras

DEFAULT_THREADS = 1  # torch threads per measured child; the fingerprint records it (benchmarks/RESULTS.md, "Across setups")
DEFAULT_TIMEOUT = 900.0  # seconds a measured child may run before it is killed (a reported failure)
SNAPSHOT_MODES = ("rerun", "never")
TRUE, FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")

Written = str | bool | list[str]  # a value as pytest gives it: a flag's text (True: a switch), an ini value ("args": a list)
P = TypeVar("P")  # an option's parsed value (None included where None is its default)
V = TypeVar("V")  # its field's value: what its resolve hook makes of the parsed one


def is_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


# -- parsing one value: (value as given) -> value, or ValueError saying what was expected ---------------

def switch(value: Written) -> bool:
    text = str(value).strip().lower()
    if text in TRUE or text in FALSE:
        return text in TRUE
    raise ValueError(f"expected true or false (also {', '.join(TRUE[1:] + FALSE[1:])})")


def one_of(*choices: str) -> Callable[[Written], str]:
    def parse(value: Written) -> str:
        text = str(value).strip()
        if text not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return text

    return parse


def _number(value: Written, read: Callable[[str], P], none: P, expected: str) -> P:
    """`value` as `read` (int, float) takes it, or `none` where it is no number. In ASCII only: int and float read
    any script's digits ("８", full-width, is 8), which look alike in the message, so the one that is not is named."""
    text = str(value).strip()
    other = next((c for c in text if not c.isascii()), None)
    if other is not None:
        raise ValueError(f"{expected}, in ASCII digits ({other!r} is U+{ord(other):04X})")
    try:
        return read(text)
    except ValueError:
        return none


def whole(value: Written) -> int:
    expected = "expected a whole number >= 1"
    number = _number(value, int, 0, expected)
    if number < 1:
        raise ValueError(expected)
    return number


def whole_up_to(limit: int, why: str) -> Callable[[Written], int]:
    """A whole number >= 1 and at most `limit` (`why`: what takes no more)."""

    def parse(value: Written) -> int:
        number = whole(value)
        if number > limit:
            raise ValueError(f"expected at most {limit}, {why}")
        return number

    return parse


def most_threads() -> tuple[int, str]:
    """The most threads a measured child can start, and why: each thread takes a pid, so no more than the kernel's
    pid_max and threads-max (above, "libgomp: Thread creation failed" aborts the child); torch's C int where /proc
    does not say (above it, each child: "Overflow when unpacking long")."""
    bounds = [(2**31 - 1, "the most threads torch takes (a C int)")]
    for name in ("pid_max", "threads-max"):
        try:
            bounds.append((int(Path("/proc/sys/kernel", name).read_text()),
                           f"the most threads this host's kernel starts (/proc/sys/kernel/{name})"))
        except (OSError, ValueError):
            continue
    return min(bounds)


def thread_count(value: Written) -> int:
    return whole_up_to(*most_threads())(value)


# a wait on a case in another environment is an epoll wait (remote.py), which takes a C int of milliseconds: a
# longer timeout failed each such case with OverflowError "timeout is too large"; a Python thread's wait is longer
LONGEST_WAIT = min(int(threading.TIMEOUT_MAX), (2**31 - 1) // 1000 - remote.START_SECONDS)


def seconds(value: Written) -> float:
    expected = "expected a number of seconds > 0"
    number = _number(value, float, 0.0, expected)
    if not number > 0 or number == float("inf"):
        raise ValueError(expected)
    if number > LONGEST_WAIT:
        raise ValueError(f"expected at most {LONGEST_WAIT} seconds, the longest wait on a case in another environment "
                         f"(epoll takes a C int of milliseconds; its helper's start of {remote.START_SECONDS} s on top)")
    return number


def text(value: Written) -> str:
    out = str(value).strip()
    if not out:
        raise ValueError("expected a path")
    return out


def revision(value: Written) -> str:
    out = str(value).strip()
    if not out or out.startswith("-"):
        raise ValueError("expected a git revision (a commit, branch or tag)")
    return out


def path(value: Written) -> Path:
    """A path as written, ~ read as the home folder (as pytest's --junitxml reads it): no shell expands one after an
    option's = or in an ini file."""
    return Path(text(value)).expanduser()


def sweep_spec(value: Written) -> tuple[sweeps.SweepAxis, ...]:
    """A spec naming no package (`--gpu-budget-sweep=` of an unset variable) is refused: it would sweep nothing,
    unsaid (an empty part, ";", is refused by sweeps.parse)."""
    axes = sweeps.parse(str(value))
    if not axes:
        raise ValueError(f"expected a package to sweep: {sweeps.SYNTAX}")
    return axes


def words(value: Written) -> tuple[str, ...]:
    """An "args" ini value: pytest gives it split into words."""
    return tuple(value) if isinstance(value, list) else tuple(str(value).split())


def modules(value: Written) -> tuple[str, ...]:
    """Module names, space-separated: one that is no dotted name ("torch," of a comma-separated list) is refused,
    where the forkserver would fail to import it only once the session has run."""
    names = words(value)
    bad = next((name for name in names if not all(part.isidentifier() for part in name.split("."))), None)
    if bad is not None:
        raise ValueError(f"{bad!r} is not a module's name: expected module names separated by spaces, "
                         "e.g. torch transformers")
    return names


# -- deriving a field's value from the one given: the definitions' resolve hooks -------------------------

@dataclass(frozen=True)
class Given(Generic[P]):
    """An option's parsed value, as written and where (a flag, an ini file, or None: the default), with the config
    and the option's flag (None: ini only)."""

    flag_name: str | None
    value: P
    written: Written | P  # the default itself where the value was not given
    source: str | None
    config: pytest.Config

    @property
    def on_command_line(self) -> bool:
        return self.source is not None and self.source == self.flag_name

    @property
    def asked_now(self) -> bool:
        """Given for this run: by its flag, or by `-o` (an ini value on the command line, not the project's file)."""
        return self.on_command_line or (self.source is not None and self.source.startswith(OVERRIDE))

    @property
    def root(self) -> Path:
        return Path(str(self.config.rootpath))


Resolve = Callable[[Given[P]], V]


def as_parsed(given: Given[P]) -> P:
    return given.value


def from_where_given(given: Given[Path | None]) -> Path | None:
    """A path: relative to the working folder on the command line, to the rootdir in the ini file."""
    if given.value is None:
        return None
    return (given.value if given.on_command_line else given.root / given.value).resolve()


def blocked(path: Path, folder: bool) -> str | None:
    """Why `path` cannot be written as a folder (or a file): it is a file (a folder), or lies under a file; a file, an
    existing Python source (`--gpu-budget-json test_train.py`, the report's own path left out, wrote over the module) or
    baseline file (judge/files.py replaced_baseline)."""
    if path.exists() and path.is_dir() != folder:
        return "is a file, not a folder" if folder else "is a folder, not a file"
    if not folder and (replaced := replaced_source(path) or replaced_baseline(path)):
        return f"is {replaced}"
    under = next((parent for parent in path.parents if parent.exists() and not parent.is_dir()), None)
    return None if under is None else f"lies under {under}, a file"


def writable(folder: bool) -> Resolve[Path | None, Path | None]:
    """A path the session writes (a file, or a folder of files), as from_where_given anchors it: one it could not
    write is a usage error now, not a failure once every case has run."""

    def resolve(given: Given[Path | None]) -> Path | None:
        out = from_where_given(given)
        why = None if out is None else blocked(out, folder)
        if why:
            raise pytest.UsageError(f"{given.source}={given.written!r}: {out} {why}")
        return out

    return resolve


def baselines_folder(given: Given[Path]) -> Path:
    """The rootdir's folder; kept relative where the rootdir follows the folder pytest is started in (no ini file,
    no --rootdir), for baselines.folder_for to anchor at each test file's project root."""
    config = given.config
    follows_invocation = config.inipath is None and not getattr(config.option, "rootdir", None)
    folder = given.value if follows_invocation else (given.root / given.value).resolve()
    why = blocked(folder, folder=True) if folder.is_absolute() else None  # under a file: refused once measured
    if why:
        where = f"{given.source}={given.written!r}" if given.source else f"the default baselines folder {str(given.value)!r}"
        raise pytest.UsageError(f"{where}: {folder} {why} (baselines live in <folder>/<hardware key>/<test module>.json)")
    return folder


def _installed(module: str) -> bool:
    """Whether `module` can be imported, found without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # sys.modules[module] is None: blocked
        return False


def needing(module: str, shown: str, extra: str, then: Resolve[P, V] = as_parsed) -> Resolve[P, V]:
    """A value that turns on what imports `module`: a usage error naming what to install where it is missing (the
    extra's requirements: the plugin may be a clone's install, no release on an index), never a silent pass."""

    def resolve(given: Given[P]) -> V:
        if given.value and not _installed(module):
            raise pytest.UsageError(f"{given.source} needs {shown}: {extras.install_hint(extra, module)}")
        return then(given)

    return resolve


GATE = "gpu_budget"  # the option that turns the gate on
OVERRIDE = "-o "  # how a value given by pytest's -o NAME=VALUE is named as its source (ini_source)


def with_the_gate(given: Given[P]) -> P:
    """A switch (or a measuring mode: a sweep, N recorded runs) that only means something in a gated run, given on the
    command line (its flag, or -o) without the gate: a usage error, where the run would otherwise skip every
    memory-budget test and pass (an ini file's setting is the project's for its gated runs, and stands)."""
    gate = next(option for option in OPTIONS if option.name == GATE)
    if given.value and given.asked_now and not read(given.config, gate).value:
        raise pytest.UsageError(f"{given.source} without --gpu-budget: every memory-budget test would be skipped and "
                                "the run pass having measured nothing; add --gpu-budget")
    return given.value


def gated(then: Resolve[P, V] = as_parsed) -> Resolve[P, V]:
    """A setting only a gated run reads (a scale, a child's limits, a report it writes): given on the command line
    without the gate, refused as with_the_gate refuses a switch, before `then` resolves it."""

    def resolve(given: Given[P]) -> V:
        with_the_gate(given)
        return then(given)

    return resolve


def with_the_switch(switch: str, runs: str = "search") -> Resolve[P, P]:
    """A number that tunes what the option `switch` turns on (`runs`: a search, an exploration), given on the command
    line (flag or -o) without it: a usage error, where the run would otherwise ignore it unsaid (the ini file's
    setting is the project's, and stands)."""

    def resolve(given: Given[P]) -> P:
        option = next(o for o in OPTIONS if o.name == switch)
        if given.asked_now and not read(given.config, option).value:
            raise pytest.UsageError(f"{given.source} without {option.flag_name}: no {runs} runs, so it would be "
                                    f"ignored; add {option.flag_name}")
        return given.value

    return resolve


# -- one definition ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Option(Generic[P, V]):
    """One option: its ini name (also the flag's dest), help, parser and default (a value of the parsed type).

    flag: it has a command-line flag, --gpu-budget-... (the ini name with dashes).
    is_switch: the flag takes no value (store_true); its ini value is true or false.
    ini_type: pytest's type of the ini value; "args" is a space-separated list, which pytest returns whether or
    not a file sets it (its registered default), so an empty one is an empty list, not the default.
    resolve: the field's value from the parsed one (a path anchored where it was given, an extra checked).
    joined: the flag may be given more than once, each adding to the value, its values joined by this separator (a
    sweep's ';'); None: the last one given stands, as a flag's does.
    """

    name: str
    help: str
    parse: Callable[[Written], P]
    default: P
    metavar: str | None = None
    is_switch: bool = False
    flag: bool = True
    ini_type: Literal["string", "args"] = "string"
    resolve: Resolve[P, V] = as_parsed
    joined: str | None = None

    @property
    def flag_name(self) -> str | None:
        return "--" + self.name.replace("_", "-") if self.flag else None

    @property
    def shown_default(self) -> str:
        """The default as the docs show it."""
        if self.is_switch:
            return "off"
        if self.default is None:
            return "-"
        if isinstance(self.default, (tuple, list)):
            return " ".join(self.default)
        if isinstance(self.default, float) and self.default.is_integer():
            return str(int(self.default))
        return str(self.default)


OPTION_KEY = "option"  # the key of a field's Option in its metadata


def option(name: str, help: str, parse: Callable[[Written], P], default: P, metavar: str | None = None, *,
           is_switch: bool = False, flag: bool = True, ini_type: Literal["string", "args"] = "string",
           resolve: Resolve[P, V] = as_parsed, joined: str | None = None) -> V:
    """A field of Options defined by its option: the field's default is the option's. Typed as the field's value,
    as dataclasses.field is: what the class body assigns stands for the field."""
    definition = Option(name, help, parse, default, metavar, is_switch, flag, ini_type, resolve, joined)
    return field(default=default, metadata={OPTION_KEY: definition})


def choice(name: str, help: str, choices: tuple[str, ...], default: str, resolve: Resolve[str, str] = as_parsed) -> str:
    """An option taking one of `choices`, shown as a|b."""
    return option(name, help, one_of(*choices), default, "|".join(choices), resolve=resolve)


def on_off(name: str, help: str, resolve: Resolve[bool, bool] = as_parsed) -> bool:
    """A switch: off by default, turned on by its flag or by true in the ini file."""
    return option(name, help, switch, False, is_switch=True, resolve=resolve)


def definition(each: Field) -> Option:
    """The Option a field of Options was defined by."""
    return each.metadata[OPTION_KEY]


# ruff: noqa: RUF009 (option(), choice() and on_off() return a dataclasses.field, not a default shared by instances)
@dataclass(frozen=True, kw_only=True)
class Options:
    """The session's options: one field per option, in the order of docs/options.md."""

    enabled: bool = on_off(GATE, "run the memory-budget tests (skipped otherwise).")
    update: bool = on_off(
        "gpu_budget_update", "write new and changed baseline entries, and re-record those recorded on another setup (so "
        "the next run compares like with like); prune entries of deleted tests, and labels a passing test no longer "
        "measures, only when the whole suite ran (no -k, -m, node ids, --lf or deselection); try again a case environment "
        "remembered as failing.", resolve=with_the_gate)
    record_runs: int = option(
        "gpu_budget_record_runs", "record a baseline entry over N fresh runs of its case: the entry keeps the median "
        "run's figures, the spread of the gated ones and the largest growth per step the runs read (at each block size "
        "of a long run), and a figure is then "
        "allowed the larger of its tolerance and six times that spread, its growth the larger of the clean allowance and "
        "six times that growth (docs/baselines.md); with --gpu-budget-update and N above 1, an entry recorded over another "
        "number of runs is re-recorded.", whole, 1, "N", resolve=with_the_gate)
    # relative where the rootdir follows the invocation folder (baselines.folder_for anchors it)
    baselines: Path = option(
        "gpu_budget_baselines", "baselines folder, relative to the rootdir, or without an ini file or --rootdir to the "
        "test file's project root (the nearest folder holding .git, pyproject.toml, setup.cfg, setup.py, tox.ini or "
        "a pytest ini file: pytest.ini, pytest.toml, .pytest.ini, .pytest.toml); "
        "entries live in FOLDER/HARDWARE-KEY/TEST-MODULE.json.", path, Path("baselines"), "DIR", resolve=gated(baselines_folder))
    scale: str = choice("gpu_budget_scale", "model scale to run: tiny (seconds on a CPU) or real (the architecture's "
                        "dimensions).", SCALES, "tiny", resolve=gated())
    json: Path | None = option("gpu_budget_json", "write the JSON report here (an ini value is relative to the rootdir); "
                               "a session without --gpu-budget, or only listing (--collect-only, --setup-plan, ...), writes "
                               "none, so the last gate's report stays, and one that cannot be written fails the gate, naming it.",
                               path, None, "PATH", resolve=gated(writable(folder=False)))
    timeout: float = option("gpu_budget_timeout", "kill a measured child after this many seconds (a reported failure).",
                            seconds, DEFAULT_TIMEOUT, "SECONDS", resolve=gated())
    # one by default, whatever the cores and the xdist workers: a second thread moved S5's tiny peak by 4 MiB
    threads: int = option("gpu_budget_threads", "torch threads in each measured child, on any host: a peak must not "
                          "depend on the runner's cores (recorded in the fingerprint).", thread_count, DEFAULT_THREADS, "N",
                          resolve=gated())
    plots: Path | None = option(
        "gpu_budget_plots", "write one PNG per measured case here: host RAM and GPU memory per phase and step, with the "
        "budget and the baseline (needs the plots extra: matplotlib; an ini value is relative to the rootdir).", path, None,
        "DIR", resolve=gated(needing("matplotlib", "matplotlib", "plots", then=writable(folder=True))))
    require_gpu: bool = on_off(
        "gpu_budget_require_gpu", "the GPU gate: fail when no CUDA GPU is visible (a test skipped for lack of one fails), "
        "and fail the session when nothing was measured.", resolve=with_the_gate)
    malloc: str = choice("gpu_budget_malloc", "host allocator of the measured children: steady (glibc's mmap threshold "
                         "fixed, so peaks repeat run to run) or system (glibc's defaults, as a plain process runs).",
                         forkserver.MALLOC_MODES, "steady", resolve=gated())
    dispatch: str = choice("gpu_budget_cpu_dispatch", "CPU kernels of the measured children: avx2 (on x86-64: ATen, "
                           "oneDNN and MKL capped at AVX2, so any x86-64 host runs the same kernels and peaks) or native "
                           "(the libraries pick by CPU).", dispatch.MODES, "avx2", resolve=gated())
    snapshot: str = choice("gpu_budget_snapshot", "memory snapshots of failing CUDA cases: rerun runs a failing case once "
                           "more with the allocation recorder on and keeps its snapshot (the judged run never records), "
                           "or never.", SNAPSHOT_MODES, "rerun", resolve=gated())
    remediate: bool = on_off(
        "gpu_budget_remediate", "when a case breaks its budget, search its fixes cheapest first, each in a measured "
        "child, and report the cheapest passing set (a case expected over budget keeps its verdict).",
        resolve=with_the_gate)
    remediate_max_runs: int = option("gpu_budget_remediate_max_runs", "at most N real runs per remediation search.",
                                     whole, DEFAULT_MAX_RUNS, "N", resolve=with_the_switch("gpu_budget_remediate"))
    explore: bool = on_off("gpu_budget_explore", "run the Hypothesis explorations (opt-in: estimator-screened, confirmed "
                           "by real runs).", resolve=needing("hypothesis", "Hypothesis", "explore", then=with_the_gate))
    explore_examples: int = option("gpu_budget_explore_examples", "Hypothesis max_examples per exploration.", whole,
                                   DEFAULT_EXAMPLES, "N", resolve=with_the_switch("gpu_budget_explore", "exploration"))
    probes: bool = on_off(
        "gpu_budget_probes", "run the probes too: tests marked gpu_budget_probe, unjudged measurements (peak() only, no "
        "verdict) that measure a finding and assert it (opt-in, as the explorations: the gate runs every case that gets "
        "a verdict).", resolve=with_the_gate)
    gpus_per_worker: int = option(
        "gpu_budget_gpus_per_worker", "GPUs each xdist worker (or a serial run) measures on, disjoint across workers "
        "where the host has enough: a case launching N ranks on CUDA (Scenario(ranks=N)) needs N.", whole, 1, "N", resolve=gated())
    against: str | None = option(
        "gpu_budget_against", "measure each selected case at git revision REF too, in a worktree, interleaved with the "
        "working tree in fresh pytest sessions (base, head, base, head, ...), and judge head against base, no stored "
        "baseline needed: docs/against.md.", revision, None, "REF")
    sweep: tuple[sweeps.SweepAxis, ...] | None = option(
        "gpu_budget_sweep", "measure each selected case once more at each version of a package, each in an environment "
        "made over the running one: SPEC is PACKAGE==V1,V2[;PACKAGE==V1,...], each package swept on its own (the others "
        "as they run). The version a case runs at is gated as usual, the others are reported beside it, with their "
        "change against it, flagged OVER BUDGET where over the case's budget, failing nothing (docs/declaring.md, "
        "'Sweeps'); given more than once, each adds its packages, as ';' does.", sweep_spec, None, "SPEC",
        resolve=with_the_gate, joined=";")
    envs: Path | None = option(
        "gpu_budget_envs", "where the environments cases declare (and sweeps make) are kept across runs (default: "
        "pytest's cache, or with -p no:cacheprovider .gpu-budget-envs in the rootdir, which git is told to ignore, as it "
        "is a chosen folder the session makes or keeps nothing else in; an ini value is relative to the rootdir); the GPU "
        "workflow points it outside the workspace, which checkout wipes.", path, None, "DIR", resolve=gated(writable(folder=True)))
    preload: tuple[str, ...] = option(
        "gpu_budget_preload", "modules the forkserver imports once for all measured children (ini only; space-separated, "
        "empty for none).", modules, forkserver.DEFAULT_PRELOAD, flag=False, ini_type="args")

    @classmethod
    def from_config(cls, config: pytest.Config) -> Options:
        """Every value parsed first (a bad value is named before any derived check), then each field resolved."""
        defined = {each.name: definition(each) for each in fields(cls)}
        given = {name: read(config, option) for name, option in defined.items()}
        return cls(**{name: defined[name].resolve(one) for name, one in given.items()})

    @property
    def snapshots(self) -> Path:
        """Where memory snapshots of failing CUDA cases go: next to the JSON report."""
        return (self.json.parent if self.json else Path.cwd()) / "gpu-budget-snapshots"


OPTIONS: tuple[Option, ...] = tuple(definition(each) for each in fields(Options))
BY_NAME = {option.name: option for option in OPTIONS}


# -- pytest: registering and reading ----------------------------------------------------------------------

def register(parser: pytest.Parser) -> None:
    """Each option's flag (in the gpu-budget group) and its ini value, with the same help."""
    group = parser.getgroup("gpu-budget", "memory-budget tests of real fine-tune steps")
    for option in OPTIONS:
        if option.flag:
            extra = {"action": "store_true"} if option.is_switch else {"metavar": option.metavar}
            if option.joined is not None:  # every one given kept: the last alone dropped the others unsaid
                extra["action"] = "append"
            default = "" if option.is_switch else f"; default {option.shown_default}"
            group.addoption(option.flag_name, dest=option.name, default=None, **extra,
                            help=f"{option.help} (ini {option.name}{default})")
        flag = f"{option.flag_name}: " if option.flag else ""
        shown = " (true or false)" if option.is_switch else f" (default {option.shown_default})"
        if option.ini_type == "args":
            parser.addini(option.name, f"{flag}{option.help}{shown}", type="args", default=list(option.default))
        else:
            parser.addini(option.name, f"{flag}{option.help}{shown}", type=ini_type(option.parse), default="")


TYPED_INI = pytest.version_tuple >= (9, 2)  # addini(type=str | bool): pytest 9.2's typed values in [tool.pytest]
NATIVE = {switch: bool, whole: int, thread_count: int, seconds: float}  # the TOML type each of these parsers also reads


def ini_type(parse: Callable[[Written], object]) -> object:
    """The ini value's type: text first, so an ini file's value reaches the option's own parser (and its error), and
    where pytest reads [tool.pytest] typed (9.2 on) also the TOML type a user writes (true, 60), which a plain
    string option refuses ("expects a string, got bool")."""
    native = NATIVE.get(parse)
    return str | native if TYPED_INI and native is not None else "string"


def value_or_ini(config: pytest.Config, option: Option) -> tuple[Written, str] | None:
    """The option's value as given and where: the command line, else the ini file; None where neither gives one."""
    if option.flag:
        given = config.getoption(option.name)
        if isinstance(given, list):  # a flag given more than once (Option.joined)
            given = str(option.joined).join(given)
        if given is not None and given is not False:
            return given, option.flag_name
    given = config.getini(option.name)
    if option.ini_type == "args" or (given is not None and str(given).strip() != ""):  # args: pytest's registered
        return given, ini_source(config, option.name)  # default where no file sets it
    return None


def ini_source(config: pytest.Config, name: str) -> str:
    """Where an ini value came from: `-o name=...` on the command line (which overrides the file), else the ini file."""
    return f"{OVERRIDE}{name}" if overridden(config, name) else f"{config.inipath}: {name}"


def overridden(config: pytest.Config, name: str) -> bool:
    """Whether the ini value `name` was given on the command line (`-o name=...`)."""
    return any(each.split("=", 1)[0] == name for each in config.getoption("override_ini") or ())


def read(config: pytest.Config, option: Option[P, V]) -> Given[P]:
    """The option's parsed value, as written and where (source None: the default); a bad value is a usage error."""
    found = value_or_ini(config, option)
    if found is None:
        return Given(option.flag_name, option.default, option.default, None, config)
    written, source = found
    try:
        return Given(option.flag_name, option.parse(written), written, source, config)
    except ValueError as exc:
        raise pytest.UsageError(f"{source}={written!r}: {exc}") from None


# -- docs/options.md ------------------------------------------------------------------------------------

def _cell(value: str) -> str:
    return value.replace("|", "\\|")


def table() -> str:
    """The options as a markdown table: option, ini name, default, help; one row per definition, in order."""
    rows = ["| option | ini | default | meaning |", "|---|---|---|---|"]
    for option in OPTIONS:
        flag = "" if not option.flag else f"`{option.flag_name}`" if option.is_switch else \
            f"`{option.flag_name}={_cell(option.metavar or 'VALUE')}`"
        ini = f"`{option.name}`" + (" (true/false)" if option.is_switch else "")
        rows.append(f"| {flag} | {ini} | `{_cell(option.shown_default)}` | {_cell(option.help)} |")
    return "\n".join(rows) + "\n"


def document() -> str:
    """docs/options.md: generated from OPTIONS (tests/docs/test_options_doc.py holds the file to it, byte for byte)."""
    return (
        "# Options\n\n"
        "<!-- generated from plugin/gpu_budget/session/options.py (OPTIONS): "
        "python -m gpu_budget options > docs/options.md -->\n\n"
        "Every option is a command-line flag and an ini value (`[pytest]` in pytest.ini or tox.ini, "
        "`[tool.pytest.ini_options]` in pyproject.toml, or with pytest 9.2 on its typed `[tool.pytest]`, where a switch "
        "may be written `true` and a number as a TOML number). The command line wins over the ini file, the ini file "
        "over the default. A switch is turned on by its flag or by `true` in the ini file. A path given in the "
        "ini file is relative to the rootdir; on the command line, to the working folder (the baselines folder: "
        "the rootdir in both, or without an ini file or --rootdir the test file's project root), and a leading `~` is the home folder; pytest's `-o NAME=VALUE` gives an ini value "
        "on the command line, read as the file's would be. A bad value, from any of these, is a usage error naming the value "
        "and where it was given, "
        "as is a path the session could not write (a report path that is a folder, a folder path that is a file, "
        "either under a file), before any case runs. An option that acts in a gated run only (--gpu-budget-update, "
        "-require-gpu, -remediate, -explore, -probes, -sweep, -record-runs, and the settings only such a run reads: "
        "-scale, -timeout, -threads, -malloc, -gpus-per-worker, -json, -plots, -baselines, -envs, -snapshot, "
        "-cpu-dispatch) given on the command line, by its flag or by `-o`, without --gpu-budget is a usage error: "
        "every memory-budget test would be skipped, and the run pass; so is --gpu-budget-remediate-max-runs without "
        "--gpu-budget-remediate, and --gpu-budget-explore-examples without --gpu-budget-explore, which each would "
        "leave unused. An ini key no option has that starts `gpu_budget` or "
        "reads like one of these (`gpu_bugdet`, `gpu_budget_require_gppu`) is a usage error naming it and the option "
        "it reads like, when collection ends, before any case runs: pytest only warns of an unknown key and runs on "
        "without it, so a misspelt `gpu_budget = true` would skip every memory-budget test and pass (the other "
        "unknown keys stay pytest's warning; `-p no:warnings` or an `ignore` filter of its config warnings silences "
        "this check too).\n\n"
        + table()
        + "\n`GPU_BUDGET_ASSETS=DIR` (environment): where prepared models and clips are kept (default: pytest's "
        "cache, or with -p no:cacheprovider .gpu-budget-assets in the rootdir, which git is told to ignore); the GPU "
        "workflow points it outside the workspace, which checkout wipes.\n"
        "\n`GPU_BUDGET_WHEELHOUSE=DIR` (environment): on a host without a package index, a folder of wheels "
        "fetched where one was reached, taken as the resolution of a case's `environment=` and of sweeps (its "
        "wheels installed with --no-deps from it alone; docs/declaring.md, \"environment=\").\n"
    )
