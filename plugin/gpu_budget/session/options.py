"""The gate's options, defined once: each is a command-line flag and an ini value, read into plain data.

OPTIONS is the one list of definitions: `register` adds them to pytest (the
flag and the ini value, with the same help), `Options.from_config` reads them
(the command line wins over the ini file, the ini file over the default, as
pytest-memray's `value_or_ini`), and `document` renders docs/options.md from
them. A bad value, from either place, is a usage error naming where it came
from and the value.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gpu_budget.isolate import dispatch
from gpu_budget.isolate import forkserver as isolate
from gpu_budget.search.explore import DEFAULT_EXAMPLES

DEFAULT_THREADS = 1  # torch threads per measured child; the fingerprint records it (benchmarks/RESULTS.md, "Across setups")
DEFAULT_TIMEOUT = 900.0  # seconds a measured child may run before it is killed (a reported failure)
DEFAULT_MAX_RUNS = 8  # real runs per remediation search
SCALES = ("tiny", "real")
MALLOC_MODES = ("steady", "system")
SNAPSHOT_MODES = ("rerun", "never")
TRUE, FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def is_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


# -- parsing one value: (value as given) -> value, or ValueError saying what was expected ---------------

def switch(value: Any) -> bool:
    text = str(value).strip().lower()
    if text in TRUE or text in FALSE:
        return text in TRUE
    raise ValueError(f"expected true or false (also {', '.join(TRUE[1:] + FALSE[1:])})")


def one_of(*choices: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        text = str(value).strip()
        if text not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return text

    return parse


def whole(value: Any) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number < 1:
        raise ValueError("expected a whole number >= 1")
    return number


def seconds(value: Any) -> float:
    try:
        number = float(str(value).strip())
    except ValueError:
        number = 0.0
    if not number > 0 or number == float("inf"):
        raise ValueError("expected a number of seconds > 0")
    return number


def text(value: Any) -> str:
    out = str(value).strip()
    if not out:
        raise ValueError("expected a path")
    return out


@dataclass(frozen=True)
class Option:
    """One option: its ini name (also the flag's dest), help, parser and default (a value of the parsed type).

    flag: it has a command-line flag, --gpu-budget-... (the ini name with dashes).
    is_switch: the flag takes no value (store_true); its ini value is true or false.
    """

    name: str
    help: str
    parse: Callable[[Any], Any] = text
    default: Any = None
    metavar: str | None = None
    is_switch: bool = False
    flag: bool = True

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


OPTIONS: tuple[Option, ...] = (
    Option("gpu_budget", "run the memory-budget tests (skipped otherwise).", switch, False, is_switch=True),
    Option("gpu_budget_update", "write new and changed baseline entries, and re-record those recorded on another setup (so the next run "
           "compares like with like); prune entries of deleted tests only when "
           "the whole suite ran (no -k, -m, node ids or deselection).", switch, False, is_switch=True),
    Option("gpu_budget_baselines", "baselines folder, relative to the rootdir, or without an ini file to the test "
           "file's project root (the nearest folder holding .git, pyproject.toml, setup.cfg, setup.py, tox.ini or "
           "pytest.ini); entries live in FOLDER/HARDWARE-KEY/TEST-MODULE.json.", text, "baselines", "DIR"),
    Option("gpu_budget_scale", "model scale to run: tiny (seconds on a CPU) or real (the architecture's "
           "dimensions).", one_of(*SCALES), "tiny", "|".join(SCALES)),
    Option("gpu_budget_json", "write the JSON report here (an ini value is relative to the rootdir).", text, None,
           "PATH"),
    Option("gpu_budget_timeout", "kill a measured child after this many seconds (a reported failure).", seconds,
           DEFAULT_TIMEOUT, "SECONDS"),
    Option("gpu_budget_threads", "torch threads in each measured child, on any host: a peak must not depend on "
           "the runner's cores (recorded in the fingerprint).", whole, DEFAULT_THREADS, "N"),
    Option("gpu_budget_plots", "write one PNG per measured case here: host RAM and GPU memory per phase and step, "
           "with the budget and the baseline (needs the plots extra: matplotlib; an ini value is relative to the "
           "rootdir).", text, None, "DIR"),
    Option("gpu_budget_require_gpu", "the GPU gate: fail when no CUDA GPU is visible (a test skipped for lack of "
           "one fails), and fail the session when nothing was measured.", switch, False, is_switch=True),
    Option("gpu_budget_malloc", "host allocator of the measured children: steady (glibc's mmap threshold fixed, "
           "so peaks repeat run to run) or system (glibc's defaults, as a plain process runs).",
           one_of(*MALLOC_MODES), "steady", "|".join(MALLOC_MODES)),
    Option("gpu_budget_cpu_dispatch", "CPU kernels of the measured children: avx2 (on x86-64: ATen, oneDNN and MKL "
           "capped at AVX2, so any x86-64 host runs the same kernels and peaks) or native (the libraries pick by "
           "CPU).", one_of(*dispatch.MODES), "avx2", "|".join(dispatch.MODES)),
    Option("gpu_budget_snapshot", "memory snapshots of failing CUDA cases: rerun runs a failing case once more "
           "with the allocation recorder on and keeps its snapshot (the judged run never records), or never.",
           one_of(*SNAPSHOT_MODES), "rerun", "|".join(SNAPSHOT_MODES)),
    Option("gpu_budget_remediate", "when a case breaks its budget, search its fixes cheapest first, each in a "
           "measured child, and report the cheapest passing set (a case expected over budget keeps its verdict).",
           switch, False, is_switch=True),
    Option("gpu_budget_remediate_max_runs", "at most N real runs per remediation search.", whole, DEFAULT_MAX_RUNS,
           "N"),
    Option("gpu_budget_explore", "run the Hypothesis explorations (opt-in: estimator-screened, confirmed by real "
           "runs).", switch, False, is_switch=True),
    Option("gpu_budget_explore_examples", "Hypothesis max_examples per exploration.", whole, DEFAULT_EXAMPLES, "N"),
    Option("gpu_budget_probes", "run the probes too: tests marked gpu_budget_probe, unjudged measurements "
           "(peak() only, no verdict) that measure a finding and assert it (opt-in, as the explorations: the gate "
           "runs every case that gets a verdict).", switch, False, is_switch=True),
    Option("gpu_budget_gpus_per_worker", "GPUs each xdist worker (or a serial run) measures on, disjoint across "
           "workers where the host has enough: a case launching N ranks on CUDA (Scenario(ranks=N)) needs N.",
           whole, 1, "N"),
    Option("gpu_budget_preload", "modules the forkserver imports once for all measured children (ini only; "
           "space-separated, empty for none).", tuple, isolate.DEFAULT_PRELOAD, flag=False),
)
BY_NAME = {option.name: option for option in OPTIONS}


def register(parser: pytest.Parser) -> None:
    """Each option's flag (in the gpu-budget group) and its ini value, with the same help."""
    group = parser.getgroup("gpu-budget", "memory-budget tests of real fine-tune steps")
    for option in OPTIONS:
        if option.flag:
            extra = {"action": "store_true"} if option.is_switch else {"metavar": option.metavar}
            default = "" if option.is_switch else f"; default {option.shown_default}"
            group.addoption(option.flag_name, dest=option.name, default=None, **extra,
                            help=f"{option.help} (ini {option.name}{default})")
        if option.name == "gpu_budget_preload":
            parser.addini(option.name, option.help, type="args", default=list(option.default))
        else:
            shown = " (true or false)" if option.is_switch else f" (default {option.shown_default})"
            parser.addini(option.name, f"{option.flag_name}: {option.help}{shown}", default="")


def value_or_ini(config: pytest.Config, option: Option) -> tuple[Any, str | None]:
    """The option's value as given and where: the command line, else the ini file, else (default, None)."""
    if option.flag:
        given = config.getoption(option.name)
        if given is not None and given is not False:
            return given, option.flag_name
    given = config.getini(option.name)
    if option.name == "gpu_budget_preload":
        return tuple(given), f"{config.inipath}: {option.name}"  # the registered default when no ini sets it
    if given is not None and str(given).strip() != "":
        return given, f"{config.inipath}: {option.name}"
    return option.default, None


def read(config: pytest.Config, option: Option) -> tuple[Any, str | None]:
    """The option's parsed value and where it came from (None: the default); a bad value is a usage error."""
    given, source = value_or_ini(config, option)
    if source is None:
        return given, None
    try:
        return option.parse(given), source
    except ValueError as exc:
        raise pytest.UsageError(f"{source}={given!r}: {exc}") from None


def _follows_invocation(config: pytest.Config) -> bool:
    """Whether pytest's rootdir follows the folder pytest is started in (no ini file fixes it, no --rootdir): the
    baselines folder is then kept relative, for baselines.folder_for to take from each test file's project root."""
    return config.inipath is None and not getattr(config.option, "rootdir", None)


def _installed(module: str) -> bool:
    """Whether `module` can be imported, found without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # sys.modules[module] is None: blocked
        return False


@dataclass
class Options:
    enabled: bool
    update: bool
    baselines: Path  # relative where the rootdir follows the invocation folder (baselines.folder_for anchors it)
    scale: str
    json: Path | None
    timeout: float
    threads: int
    preload: tuple[str, ...]
    plots: Path | None = None
    require_gpu: bool = False
    malloc: str = "steady"
    dispatch: str = "avx2"
    remediate: bool = False
    remediate_max_runs: int = DEFAULT_MAX_RUNS
    snapshot: str = "rerun"
    explore: bool = False  # run the Hypothesis explorations (gpu_budget.explore())
    explore_examples: int = DEFAULT_EXAMPLES  # Hypothesis max_examples per exploration
    probes: bool = False  # run the tests marked gpu_budget_probe (unjudged: no verdict)
    gpus_per_worker: int = 1  # GPUs each worker (or a serial run) measures on: a k-rank CUDA case needs k

    @classmethod
    def from_config(cls, config: pytest.Config) -> Options:
        values = {name: read(config, option) for name, option in BY_NAME.items()}
        root = Path(str(config.rootpath))

        def path(name: str) -> Path | None:
            """A path option: relative to the working folder on the command line, to the rootdir in the ini file."""
            value, source = values[name]
            if value is None:
                return None
            return (Path(value) if source == BY_NAME[name].flag_name else root / value).resolve()

        baselines, source = values["gpu_budget_baselines"]
        folder = Path(baselines) if _follows_invocation(config) else (root / baselines).resolve()
        if folder.is_absolute() and folder.exists() and not folder.is_dir():
            where = f"{source}={baselines!r}" if source else f"the default baselines folder {baselines!r}"
            raise pytest.UsageError(f"{where}: {folder} is not a folder "
                                    f"(baselines live in <folder>/<hardware key>/<test module>.json)")
        plots, source = values["gpu_budget_plots"]
        if plots and not _installed("matplotlib"):
            raise pytest.UsageError(f"{source} needs matplotlib: pip install 'pytest-gpu-budget[plots]'")
        explore, source = values["gpu_budget_explore"]
        if explore and not _installed("hypothesis"):  # never a silent pass of the explorations
            raise pytest.UsageError(f"{source} needs Hypothesis: pip install 'pytest-gpu-budget[explore]'")
        return cls(
            enabled=values["gpu_budget"][0],
            update=values["gpu_budget_update"][0],
            baselines=folder,
            scale=values["gpu_budget_scale"][0],
            json=path("gpu_budget_json"),
            timeout=values["gpu_budget_timeout"][0],
            # one by default, whatever the cores and the xdist workers: a second thread moved S5's tiny peak by 4 MiB
            threads=values["gpu_budget_threads"][0],
            preload=values["gpu_budget_preload"][0],
            plots=path("gpu_budget_plots"),
            require_gpu=values["gpu_budget_require_gpu"][0],
            malloc=values["gpu_budget_malloc"][0],
            dispatch=values["gpu_budget_cpu_dispatch"][0],
            remediate=values["gpu_budget_remediate"][0],
            remediate_max_runs=values["gpu_budget_remediate_max_runs"][0],
            snapshot=values["gpu_budget_snapshot"][0],
            explore=values["gpu_budget_explore"][0],
            explore_examples=values["gpu_budget_explore_examples"][0],
            probes=values["gpu_budget_probes"][0],
            gpus_per_worker=values["gpu_budget_gpus_per_worker"][0],
        )

    @property
    def snapshots(self) -> Path:
        """Where memory snapshots of failing CUDA cases go: next to the JSON report."""
        return (self.json.parent if self.json else Path.cwd()) / "gpu-budget-snapshots"


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
        "`[tool.pytest.ini_options]` in pyproject.toml). The command line wins over the ini file, the ini file "
        "over the default. A switch is turned on by its flag or by `true` in the ini file. A path given in the "
        "ini file is relative to the rootdir; on the command line, to the working folder (the baselines folder: "
        "the rootdir in both, or without an ini file the test file's project root). A bad value, from either place, is a usage error naming the value.\n\n"
        + table()
        + "\n`GPU_BUDGET_ASSETS=DIR` (environment): where prepared models and clips are kept (default: pytest's "
        "cache); the GPU workflow points it outside the workspace, which checkout wipes.\n"
    )
