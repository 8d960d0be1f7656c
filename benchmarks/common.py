"""What every benchmark section shares: paths, the gate's preload, the scenarios, the run's fingerprint, JSON out,
and the lines each section's RESULTS.md renderer writes the same way.

Sections measure under the gate's own conditions (the forkserver preload from
pyproject.toml, one torch thread per child as under `-n 2`), so a number here
is a number the gate would see.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
MIB = 2**20
THREADS = 1  # the gate under -n 2 on two cores: one core and one torch thread per child
_LOAD_AT_START = os.getloadavg()  # each section runs in its own process: this is the section's start

for _path in (ROOT, ROOT / "memtests"):  # scenario definitions live beside the memtests
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from gpu_budget.report import revision


def gate_preload() -> tuple[str, ...]:
    """The forkserver preload the gate uses (pyproject.toml, gpu_budget_preload)."""
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    return tuple(ini["gpu_budget_preload"])


def scenarios() -> dict:
    """One configuration per scenario at tiny scale, as the memtests gate them (name -> Scenario)."""
    from s1_wav2vec2.scenarios import AS_REPORTED as S1_AS_REPORTED
    from s2_paraformer.scenarios import S2
    from s3_qwen2_audio.scenarios import AS_REPORTED as S3_AS_REPORTED
    from s4_wrap_order.scenarios import FIXED as S4_FIXED
    from s5_generic_oom.scenarios import S5

    return {
        "s1 as-reported": S1_AS_REPORTED,
        "s1 truncate": S1_AS_REPORTED.with_fixes("truncate"),
        "s2 max_duration": S2.with_fixes("max_duration"),
        "s3 as-reported": S3_AS_REPORTED,
        "s4 fixed": S4_FIXED,
        "s5 as-reported": S5,
    }


def short_commit(ref: str = "HEAD") -> str:
    """The short commit a ref names in this repository (raises where git or the ref is missing)."""
    return subprocess.run(["git", "rev-parse", "--short", ref], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()


def fingerprint() -> dict:
    """Where and with what a section ran: enough to tell two RESULTS.md apart, and the code it measured (`git`: the
    commit and whether uncommitted edits were in the tree, as the plugin's JSON report records it)."""
    versions = {}
    for pkg in ("torch", "transformers", "memray", "pytest-memray", "psutil", "numpy", "funasr"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    try:
        commit = short_commit()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "commit": commit,
        "git": revision.state(ROOT),  # the full commit and whether the tree was dirty; None where git cannot tell
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_start": [round(x, 2) for x in _LOAD_AT_START],
        "load_average": [round(x, 2) for x in os.getloadavg()],  # when written: the section's end
        "versions": versions,
    }


def write(section: str, data: dict, path: Path | None = None) -> Path:
    """Write one section's results (with the fingerprint) as benchmarks/results/<section>.json."""
    path = path or RESULTS / f"{section}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"section": section, "run": fingerprint(), **data}, indent=1) + "\n")
    return path


def saver(section: str, data: dict, path: Path | None = None) -> Callable[..., None]:
    """A long section's save(done=False): writes `data` as it stands, with whether the run is complete and its wall
    time since this call, so a run cut short keeps what it measured."""
    t_start = time.perf_counter()

    def save(done: bool = False) -> None:
        write(section, {**data, "complete": done, "wall_s": round(time.perf_counter() - t_start, 1)}, path=path)

    return save


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def mib(n: float | None) -> float | None:
    return None if n is None else n / MIB


def rule_at(rev: str, module: str, args: list[str]) -> object:
    """What `python -m <module> <args> --measure-only OUT` measures with the plugin at `rev` (its plugin/ extracted
    with `git archive`, imported first in a subprocess; the benchmark itself this checkout's): the rule at a revision,
    beside the rule in force, in one run. OUT's JSON holds {"module": gpu_budget.__file__, "verdicts": ...}."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "plugin.tar"
        subprocess.run(["git", "archive", "-o", str(archive), rev, "plugin"], cwd=ROOT, check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        out = Path(tmp) / "before.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(tmp) / "plugin"), str(ROOT)])}
        subprocess.run([sys.executable, "-m", module, *args, "--measure-only", str(out)], cwd=tmp, env=env, check=True)
        measured = json.loads(out.read_text())
        if not measured["module"].startswith(tmp):  # the rule in force imported instead: no comparison
            raise RuntimeError(f"the rule at {rev} was not the one imported: {measured['module']}")
        return measured["verdicts"]


def ran(data: dict) -> str:
    """RESULTS.md's line under a section's heading: where and with what it ran (fingerprint(), read back)."""
    run = data["run"]
    start = f"{run['load_average_start'][0]} at its start, " if "load_average_start" in run else ""
    return (f"_Ran {run['date']} at commit `{run['commit']}`, Python {run['python']}, {run['cpus']} cores; 1-minute "
            f"load average {start}{run['load_average'][0]} at its end (the machine is shared)._")


def incomplete(data: dict, last: str = "session") -> str:
    """What follows ran(data) where the run stopped before its `last` session (or run): said in bold, else nothing."""
    return "" if data.get("complete") else f" **Incomplete: the run stopped before its last {last}.**"


def missing(section: str, only: str) -> list[str]:
    """RESULTS.md's lines for a section without JSON: how to produce it."""
    return [f"_Not run yet: `python -m benchmarks.run --only {only}` writes `benchmarks/results/{section}.json`._", ""]


def span(values: list[float], fmt: str) -> str:
    """'min .. max' of values in one format, '-' for none."""
    return f"{min(values):{fmt}} .. {max(values):{fmt}}" if values else "-"


def session_environ(paths: list[str], **env: str) -> dict[str, str]:
    """The environment of a benchmark's own gated pytest process: CI unset (a case without a baseline would fail),
    `paths` ahead on PYTHONPATH, `env` added."""
    pythonpath = os.pathsep.join(filter(None, [*paths, os.environ.get("PYTHONPATH")]))
    return {**{k: v for k, v in os.environ.items() if k != "CI"}, "PYTHONPATH": pythonpath, **env}


def one_case_session(folder: Path, kind: str, args: list[str], paths: list[str],
                     env: dict[str, str]) -> tuple[dict, int, float, tuple[float, ...]]:
    """One fresh `pytest --gpu-budget` process over a project of one case (CI unset, `paths` ahead on PYTHONPATH,
    `env` added); the JSON report's one row, the exit code, the session's wall seconds and the load at its start."""
    report = folder / f"report-{kind}-{time.monotonic_ns()}.json"
    cmd = [sys.executable, "-m", "pytest", "--gpu-budget", "-q", "--gpu-budget-baselines", str(folder / "baselines"),
           "--gpu-budget-json", str(report), *args]
    env = session_environ(paths, **env)
    load_start = os.getloadavg()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    rows = json.loads(report.read_text())["results"] if report.exists() else []
    if len(rows) != 1 or not (rows[0].get("peaks") or {}).get("ram_tree"):
        raise RuntimeError(f"{kind}: no measurement (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    return rows[0], proc.returncode, wall, load_start

