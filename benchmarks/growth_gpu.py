"""growth-gpu: the GPU growth allowance from N clean and N leaking runs of the command part's Trainer script.

growth.ALLOWANCE["vram_allocated"] (judge/growth.py) rests on one clean GPU
run's rises; host RAM's (RAM_ALLOWANCE) on 38 clean runs, 6x
(compare.SPREAD_MULTIPLE) the largest growth they read
(benchmarks/growth_catalogue.py). This gives the GPU figure the same footing:
S1's unchanged Trainer script as the GPU kit's `command` part runs it
(memtests/test_gpu_command.py's TRAINER_SCRIPT: 10 optimizer steps under
vram="1 GiB", steps=10_000, device="cuda"), `--runs` times clean and `--runs`
times keeping `--leak-mib` MiB of each step's hidden states (its
--keep_hidden_mib), each case a fresh measured child, then the derivation
(summary()): per metric the clean runs' largest growth as the rule reads it
(measure/rises.py), the allowance the host-RAM rule gives (6x it, never below
FLOOR), the clean runs the rule would fail and the leaking runs it catches
under the committed allowance and the derived one, and the leak's growth
against its planted size.

Why 0.25 MiB: the smallest leak of S1's ladder in growth_catalogue.LEAKS. An
allowance must stay below the leaks it is meant to catch, so the smallest leak
is the one that says whether the derived figure is too wide; the 1.5 MiB leak
is the command part's own, already run (gpu-command-3.report.json).

Why pytest-xdist in sessions of ten: on the H200 a measured S1 script child
took 18-23 s of wall time (gpu-command-*.report.json), so 20 runs in one
serial session come to about 400-460 s before pytest's start, S1's prepare and
a fresh machine's kernel-compiling first CUDA child measured again, against
the part's 540 s: no margin. Two xdist workers take about half. A session
stopped by SIGINT keeps the rows of the cases that finished (each rides on
its test's report: session/xdist.py; tried on the CPU: cut after 34 s, 2 of 6
runs kept); the runs still go in consecutive sessions of PER_SESSION cases
(clean and leaking alternating), the JSON written as each ends, so what a
cut costs stays within one session. Each child's GPU figures are its own
process's caching-allocator statistics, so two children sharing the GPU do
not move each other's figures (the host has 16 cores; each child runs one
torch thread, as the gate's children do). On SIGINT (the part's `timeout`
signals the whole process group, this session included) no further session
starts, and the running one has STOP_WAIT_S to end before it is killed.

`--device cpu` runs the same script on the CPU, host RAM only (ram="1 GiB",
the catalogue's budget): a dry run that proves the pipeline on a host without
CUDA. It measures no GPU figure.

    python -m benchmarks.growth_gpu --device cuda|cpu [--runs 10] [--leak-mib 0.25] [--out FILE]
    python -m benchmarks.growth_gpu --summarize benchmarks/results/growth-gpu.json   # the derivation alone
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.common import MIB, RESULTS, ROOT, saver, session_environ
from benchmarks.growth_catalogue import BUDGET, DECLARED, LEAKS
from gpu_budget.judge import growth
from gpu_budget.judge.compare import SPREAD_MULTIPLE
from gpu_budget.measure import rises

SECTION = "growth-gpu"
METRICS = ("vram_allocated", "vram_reserved", "ram_tree", "ram")  # kept per step and read per row
DERIVED = ("vram_allocated", "vram_reserved", "ram_tree")  # an allowance derived for each
BUDGET_OF = {"vram_allocated": "vram", "ram_tree": "ram", "ram": "ram"}  # vram_reserved: the rule judges no budget
# The floor an allowance keeps where 6x the clean growth is below it (every clean run reading exactly 0 included):
# the clean growth other runs measured, which these runs of one script may not show. GPU allocated: the 20 KiB rise
# between steady steps in the H200's clean S1 worker cases (gpu-h200-tiny-2.report.json; tests/docs/
# test_growth_report.py asserts it); without it, all-zero clean runs would give 0, and one 512-byte allocator block
# more in 3 of 5 steps would read as growth. Host RAM: the calibration's allowance (growth.RAM_ALLOWANCE, 38 clean
# runs). GPU reserved: none (the rule judges no reserved growth; its figure here is for the record).
FLOOR = {"vram_allocated": 20_480, "vram_reserved": 0, "ram_tree": growth.RAM_ALLOWANCE}
PER_SESSION = 10  # cases a pytest session runs (clean and leaking alternating): a cut loses at most these
WORKERS = 2  # pytest-xdist workers a session runs its cases on
CHILD_TIMEOUT_S = 240  # a measured child that hangs is stopped long before the part's 540 s
STOP_WAIT_S = 25  # after SIGINT, how long the running session may take to end
DEVICES = ("cuda", "cpu")
SCRIPT_SCENARIO = "s1_wav2vec2_script"  # TRAINER_SCRIPT's name starts so (test_s1_script.SCRIPT's)

TEST_RUNS = '''
"""growth-gpu's cases: the command part's Trainer script (memtests/test_gpu_command.py), clean and leaking."""
import pytest
from test_gpu_command import TRAINER_SCRIPT

CASES = {cases}


@pytest.mark.gpu_budget(**{mark}, steps={{"tiny": {declared}}})
@pytest.mark.parametrize("label", list(CASES))
def test_run(gpu_budget, label):
    gpu_budget.measure(TRAINER_SCRIPT.with_params(keep_hidden_mib=CASES[label]), label=label)
'''
PYTEST_INI = "[pytest]\naddopts = -p no:cacheprovider -p no:randomly\n"


def mark_of(device: str) -> dict:
    """The marker's budget: the command part's (vram 1 GiB on CUDA), or host RAM only on the CPU."""
    if device == "cuda":
        from test_gpu_command import BUDGET as COMMAND_BUDGET

        return dict(COMMAND_BUDGET)
    return {"ram": {"tiny": BUDGET}, "origin": {"tiny": "chosen"}, "device": "cpu"}


def sessions_of(runs: int, leak_mib: float, per_session: int = PER_SESSION) -> list[dict[str, float]]:
    """Case label -> MiB kept per step, a dict a session: run i clean then run i leaking, PER_SESSION cases a session,
    so every session holds both kinds."""
    cases: list[tuple[str, float]] = []
    for i in range(1, runs + 1):
        cases += [(f"clean, run {i}", 0.0), (f"{leak_mib:g} MiB/step kept, run {i}", leak_mib)]
    return [dict(cases[k:k + per_session]) for k in range(0, len(cases), per_session)]


# -- the sessions -------------------------------------------------------------------------------------------------

class Stop:
    """SIGINT's handler while the sessions run: remembered, so no further session starts and the running one is
    killed STOP_WAIT_S later (the signal reached it too: `timeout` and a terminal signal the process group)."""

    def __init__(self) -> None:
        self.at: float | None = None

    @property
    def asked(self) -> bool:
        return self.at is not None

    def overdue(self) -> bool:
        return self.at is not None and time.perf_counter() - self.at > STOP_WAIT_S

    def __call__(self, signum, frame) -> None:
        if not self.asked:
            self.at = time.perf_counter()
            print("growth-gpu: SIGINT: no further session starts; the running one ends", flush=True)


def session(folder: Path, index: int, cases: dict[str, float], device: str, log: Path, stop: Stop,
            keep: Path) -> dict:
    """One fresh `pytest --gpu-budget -n WORKERS` over `cases` in a project of its own, its output to `log`: its
    rows (row_of), exit code and wall seconds; its pytest JSON report copied to `keep` (the gate's whole rows)."""
    project = folder / f"session-{index}"
    project.mkdir()
    (project / "pytest.ini").write_text(PYTEST_INI)
    (project / "test_runs.py").write_text(TEST_RUNS.format(cases=json.dumps(cases), mark=mark_of(device),
                                                           declared=DECLARED))
    report = project / "report.json"
    cmd = [sys.executable, "-m", "pytest", "--gpu-budget", "-q", "-rs", "-n", str(WORKERS), "--gpu-budget-scale=tiny",
           f"--gpu-budget-timeout={CHILD_TIMEOUT_S}", "--gpu-budget-baselines", str(project / "baselines"),
           "--gpu-budget-json", str(report), *(["--gpu-budget-require-gpu"] if device == "cuda" else []),
           "test_runs.py"]
    environ = session_environ([str(ROOT / "memtests"), str(ROOT)],
                              GPU_BUDGET_ASSETS=os.environ.get("GPU_BUDGET_ASSETS") or str(folder / "assets"))
    t0 = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=project, env=environ, stdout=out, stderr=subprocess.STDOUT)
        while proc.poll() is None:
            time.sleep(0.5)
            if stop.overdue():
                proc.kill()
    data = json.loads(report.read_text()) if report.exists() else {}
    if report.exists():
        shutil.copyfile(report, keep)
    return {"session": index, "cases": list(cases), "exit_code": proc.returncode,
            "wall_s": round(time.perf_counter() - t0, 1), "interrupted": stop.asked, "report_written": report.exists(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "hardware": {k: (data.get("hardware") or {}).get(k) for k in ("key", "gpu_name", "torch", "cuda")},
            "rows": [row_of(r) for r in data.get("results", [])]}


# -- a report row, as this keeps it ---------------------------------------------------------------------------------

def planted_of(row: dict) -> float:
    """MiB kept per step, from the measured command (its --keep_hidden_mib; absent: 0)."""
    command = list((row.get("info") or {}).get("command") or [])
    if "--keep_hidden_mib" in command:
        return float(command[command.index("--keep_hidden_mib") + 1])
    return 0.0


def from_reports(device: str, reports: Sequence[dict]) -> dict:
    """What summary() takes, from pytest JSON reports: their rows of S1's Trainer script (the command part's
    reports hold a DDP row beside it), one session a report."""
    return {"device": device, "sessions": [
        {"session": i, "rows": [row_of(r) for r in report["results"] if r["scenario"].startswith(SCRIPT_SCENARIO)]}
        for i, report in enumerate(reports, 1)]}


def series(row: dict, metric: str) -> list[int | None]:
    return [s.get(metric) for s in row["steps"]]


def row_of(r: dict) -> dict:
    """What a report row keeps here: label, verdict, per-step figures, the rule's growth per metric, the projection."""
    steps = [{"step": s["step"], **{m: s.get(m) for m in METRICS}} for s in r.get("steps") or []]
    row = {"label": r["label"], "planted_mib": planted_of(r), "verdict": r["verdict"], "message": r.get("message"),
           "device": r.get("device"), "budget": r.get("budget") or {}, "peaks": {m: (r.get("peaks") or {}).get(m)
                                                                               for m in METRICS},
           "steps": steps, "projection": r.get("growth_projection"), "wall_s": r.get("wall_seconds")}
    row["declared_steps"] = (row["projection"] or {}).get("steps")
    row["growth"] = {m: rises.growth(series(row, m)) for m in METRICS}
    row["mean_rise"] = {m: mean_rise(series(row, m)) for m in METRICS}
    return row


def mean_rise(values: Sequence[int | None]) -> float | None:
    """The running peak's average rise per step over the judged steps (rises.WARMUP and LAST left out).

    Not the rule: a second reading of how fast a leak grows, where the rule's
    median reads the lumps of the last five judged steps; it needs only two
    judged steps, so it reads runs too short for the rule.
    """
    if any(v is None for v in values):
        return None
    judged = [int(v) for v in values][rises.WARMUP:len(values) - rises.LAST]
    if len(judged) < 2:
        return None
    return (max(judged) - judged[0]) / (len(judged) - 1)


# -- the derivation -------------------------------------------------------------------------------------------------

def judged(row: dict, metric: str, allowance: float) -> dict | None:
    """The rule on one row's series of `metric` under `allowance`: its growth, whether it is past the allowance,
    and whether the projection breaks the row's budget at its declared steps (None: too short for the rule)."""
    values = series(row, metric)
    if not values or any(v is None for v in values):
        return None
    fitted = growth.fit(growth.Series(metric, tuple(s["step"] for s in row["steps"]), tuple(values)), allowance)
    if fitted is None:
        return None
    kind = BUDGET_OF.get(metric)
    budget = row["budget"].get(kind) if kind else None
    floor = max(row["peaks"].get(metric) or 0, *values)
    projection = growth.Projection(fitted, row["declared_steps"] or 0, budget, floor)
    return {"growth": fitted.slope, "grows": fitted.grows, "breaks": projection.breaks}


def allowance_of(clean: Sequence[dict], metric: str) -> tuple[int | None, str]:
    """The allowance the host-RAM rule gives (SPREAD_MULTIPLE x the largest growth the clean runs read), never below
    FLOOR, and what it rests on."""
    read = [r["growth"][metric] for r in clean if r["growth"][metric] is not None]
    if not read:
        measured = any(s[metric] is not None for r in clean for s in r["steps"])
        return None, ("no clean run long enough for the rule to read (it needs "
                      f"{rises.MIN_STEPS} steps)" if measured else f"no clean run measured {metric}")
    largest, floor = max(read), FLOOR[metric]
    if largest == 0:
        return floor, f"every clean run read exactly 0: the floor, {floor} B/step"
    six = int(SPREAD_MULTIPLE * largest)
    if six < floor:
        return floor, f"{SPREAD_MULTIPLE}x the largest clean growth is {six} B/step, below the floor {floor} B/step"
    return six, f"{SPREAD_MULTIPLE}x the largest clean growth, {largest:.0f} B/step"


def counts(rows: list[dict], metric: str, allowance: float | None) -> dict | None:
    """How many rows the rule reads as growth (past the allowance) and fails (the projection breaks the budget)."""
    if allowance is None:
        return None
    found = [judged(r, metric, allowance) for r in rows]
    return {"past_allowance": sum(bool(j and j["grows"]) for j in found),
            "failed": sum(bool(j and j["breaks"]) for j in found),
            "unread": sum(j is None for j in found), "of": len(rows)}


def measured(rows: Sequence[dict]) -> list[dict]:
    """The rows of runs that measured (an error or a skip measured nothing)."""
    return [r for r in rows if r["verdict"] not in ("error", "skipped")]


def summary(data: dict) -> dict:
    """Per metric: the clean runs' largest growth, the derived allowance, false alarms and catches under the
    committed allowance and the derived one, and the leak's growth against its planted size."""
    rows = [r for s in data["sessions"] for r in s["rows"]]
    clean = [r for r in measured(rows) if r["planted_mib"] == 0]
    leaks = [r for r in measured(rows) if r["planted_mib"] > 0]
    planted = sorted({r["planted_mib"] for r in leaks})
    out: dict = {"device": data["device"], "clean_runs": len(clean), "leaking_runs": len(leaks),
                 "errors": [(r["label"], r["verdict"], r["message"]) for r in rows
                            if r["verdict"] in ("error", "skipped")],
                 "planted_mib_per_step": planted, "metrics": {}}
    for metric in DERIVED:
        readings = [r["growth"][metric] for r in clean]
        derived, basis = allowance_of(clean, metric)
        current = growth.ALLOWANCE.get(metric)
        read = [g for g in readings if g is not None]
        leak_growth = [r["growth"][metric] for r in leaks]
        out["metrics"][metric] = {
            "measured": any(s[metric] is not None for r in rows for s in r["steps"]), "clean_growth": readings, "largest_clean_growth": max(read) if read else None,
            "allowance": {"current": current, "derived": derived, "derived_basis": basis},
            "clean": {"current": counts(clean, metric, current), "derived": counts(clean, metric, derived)},
            "leaking": {"current": counts(leaks, metric, current), "derived": counts(leaks, metric, derived)},
            "leak_growth": leak_growth, "leak_mean_rise": [r["mean_rise"][metric] for r in leaks],
            "planted_bytes_per_step": [round(m * MIB) for m in planted]}
    return out


def lines(s: dict) -> list[str]:
    """The summary as the terminal shows it, one line a metric (the JSON holds every figure)."""
    out = [f"growth-gpu on {s['device']}: {s['clean_runs']} clean, {s['leaking_runs']} leaking runs "
           f"({', '.join(f'{m:g}' for m in s['planted_mib_per_step']) or 'none'} MiB/step planted)"
           + (f"; {len(s['errors'])} runs not measured: {s['errors']}" if s["errors"] else "")]
    for metric, m in s["metrics"].items():
        if not m["measured"]:
            out.append(f"  {metric}: not measured")
            continue
        a = m["allowance"]
        grown = [g for g in m["leak_growth"] if g is not None]
        rate = [g for g in m["leak_mean_rise"] if g is not None]
        unread = [m[side]["current"]["unread"] if m[side]["current"] else "-" for side in ("clean", "leaking")]
        out.append(f"  {metric}: largest clean growth {m['largest_clean_growth']} B/step; allowance committed "
                   f"{a['current']}, derived {a['derived']} ({a['derived_basis']}); committed/derived: clean runs "
                   f"past it {_tally(m['clean'], 'past_allowance')}, failed {_tally(m['clean'], 'failed')}; leaking runs "
                   f"past it {_tally(m['leaking'], 'past_allowance')}, failed {_tally(m['leaking'], 'failed')}; too "
                   f"short for the rule: {unread[0]} clean, {unread[1]} leaking; leak growth {min(grown, default=None)} "
                   f".. {max(grown, default=None)} B/step (mean rise {min(rate, default=None)} .. "
                   f"{max(rate, default=None)}) against {m['planted_bytes_per_step']} planted")
    return out


def _tally(side: dict, key: str) -> str:
    """'committed/derived' counts ('-': no allowance of that kind)."""
    return "/".join("-" if side[w] is None else str(side[w][key]) for w in ("current", "derived"))


def advice(s: dict) -> str:
    """The line to act on: the value for growth.ALLOWANCE["vram_allocated"], or why there is none."""
    if s["device"] != "cuda":
        return ("growth-gpu: a CPU dry run measures no GPU memory: nothing to set for vram_allocated (host RAM's "
                f"allowance by the same rule: {s['metrics']['ram_tree']['allowance']['derived']} B/step)")
    allowance = s["metrics"]["vram_allocated"]["allowance"]
    if allowance["derived"] is None:
        return f"growth-gpu: nothing to set: {allowance['derived_basis']}"
    return (f"growth-gpu: set growth.ALLOWANCE[\"vram_allocated\"] = {allowance['derived']} ({allowance['derived_basis']}"
            f"; committed: {allowance['current']})")


# -- the command line -----------------------------------------------------------------------------------------------

def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of runs, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _leak(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected MiB per step, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"a leaking run must keep more than 0 MiB per step, got {text!r}")
    return value


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.growth_gpu", description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=DEVICES,
                        help="cuda: the command part's GPU runs; cpu: the same script on the CPU, a dry run")
    parser.add_argument("--runs", type=_count, default=10, help="clean runs, and as many leaking (default 10)")
    parser.add_argument("--leak-mib", type=_leak, default=LEAKS[1],
                        help=f"MiB of hidden states each leaking run keeps per step (default {LEAKS[1]})")
    parser.add_argument("--out", type=Path, default=None,
                        help="the JSON (default benchmarks/results/growth-gpu.json, or growth-gpu-cpu-dryrun.json); "
                             "each session's pytest log and JSON report go beside it (OUT_STEM.session-N.log, "
                             ".session-N.report.json)")
    parser.add_argument("--summarize", type=Path, default=None, metavar="JSON",
                        help="run nothing: print the derivation of a JSON this wrote (a GPU host's, brought back)")
    args = parser.parse_args(argv)
    if args.device is None and args.summarize is None:
        parser.error("the following arguments are required: --device (or --summarize JSON)")
    if args.summarize is not None and not args.summarize.is_file():
        parser.error(f"argument --summarize: no such file: {str(args.summarize)!r}")
    return args


def show(path: Path) -> None:
    """The derivation of a written JSON, as the terminal shows it, and the value to set."""
    result = summary(json.loads(path.read_text()))
    print("\n".join([*lines(result), advice(result), f"growth-gpu: {path}"]), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    if args.summarize is not None:
        show(args.summarize)
        return 0
    out = args.out or RESULTS / ("growth-gpu.json" if args.device == "cuda" else "growth-gpu-cpu-dryrun.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    plan = sessions_of(args.runs, args.leak_mib)
    data = {"device": args.device, "dry_run": args.device == "cpu", "runs": args.runs, "leak_mib": args.leak_mib,
            "declared_steps": DECLARED, "mark": mark_of(args.device), "per_session": PER_SESSION, "workers": WORKERS,
            "allowance_used": dict(growth.ALLOWANCE), "sessions": []}
    stop = Stop()
    previous = signal.signal(signal.SIGINT, stop)
    folder = Path(tempfile.mkdtemp(prefix="growth-gpu-"))
    save = saver(SECTION, data, path=out)

    try:
        print(f"growth-gpu: {args.runs} clean and {args.runs} leaking runs on {args.device}, {len(plan)} session(s) "
              f"of at most {PER_SESSION} on {WORKERS} xdist workers ({time.strftime('%H:%M:%S')})", flush=True)
        for i, cases in enumerate(plan, 1):
            if stop.asked:
                break
            log = out.with_name(f"{out.stem}.session-{i}.log")
            keep = out.with_name(f"{out.stem}.session-{i}.report.json")
            data["sessions"].append(session(folder, i, cases, args.device, log, stop, keep))
            got = data["sessions"][-1]
            print(f"growth-gpu: session {i} ended (exit {got['exit_code']}, {got['wall_s']} s): "
                  f"{len(measured(got['rows']))} of {len(cases)} runs measured", flush=True)
            save(done=False)
        complete = not stop.asked and sum(len(measured(s["rows"])) for s in data["sessions"]) == 2 * args.runs
        save(done=complete)
    finally:
        signal.signal(signal.SIGINT, previous)
        shutil.rmtree(folder, ignore_errors=True)
    show(out)
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())
