"""Section 5c, growth: a leak judged by its slope over 8 steps, against clean runs of the same cases.

A leak that keeps 1.5 MiB per step moves an 8-step peak by about 1.5 %, and is
15 GiB over a real run of 10,000 steps. The growth rule (gpu_budget/judge/growth.py)
fits the growth after warm-up and projects it to the run length a test declares.
This measures, each run in a fresh measured child of the gate's forkserver (the
gate's preload, one torch thread, the steady allocator), at tiny scale with 8
optimizer steps:

1. calibration: `--runs` clean runs each of S1's Trainer script
   (memtests/test_s1_script.py, gated as a command) and of S5's loop; the
   largest growth they read is the host-RAM clean allowance (growth.RAM_ALLOWANCE
   is set to it; tests/docs/test_growth_report.py re-derives it);
2. validation: `--runs` more clean runs of each, and `--runs` runs of S1's script
   with `--keep_hidden_mib 1.5` (each training step keeps 1.5 MiB of its hidden
   states), judged by the growth rule under that allowance at steps=10,000
   against a 4 GiB budget (the issue's example).

The jobs run in rounds, each round one of every kind, so the calibration and
the validation see the same machine. Results are written after every run, so a
run cut short leaves what it measured.

    python -m benchmarks.growth_leak [--runs 10] [--steps 8]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace

from benchmarks.common import MIB, RESULTS, THREADS, gate_preload, write
from benchmarks.report import GROWTH_TARGETS, growth_summary

SECTION = "growth"
LEAK_MIB = 1.5
DECLARED_STEPS = 10_000
BUDGET = "4 GiB"
KINDS = ("s1 clean calibration", "s5 clean calibration", "s1 clean", "s5 clean", "s1 leak")


def cases(steps: int) -> dict:
    """The three configurations at `steps` optimizer steps: S1's script (clean, and with the planted leak), S5."""
    from s5_generic_oom.scenarios import S5
    from test_s1_script import SCRIPT

    script = replace(SCRIPT, command=[*SCRIPT.command, "--keep_hidden_mib", "{keep_hidden_mib}"],
                     params={**SCRIPT.params, "keep_hidden_mib": 0})
    return {"s1 clean": script.with_params(max_steps=steps),
            "s1 leak": script.with_params(max_steps=steps, keep_hidden_mib=LEAK_MIB),
            "s5 clean": S5.with_params(steps=steps)}


def allowance_of(runs: list[dict]) -> int:
    """The host-RAM clean allowance: the largest growth (bytes per step, rounded up) the calibration runs read."""
    from gpu_budget.judge import growth

    slopes = [growth.fit(growth.Series.of(r["steps"], "ram_tree"), 0).slope for r in runs if r["stage"] == "calibration"]
    return math.ceil(max(slopes))


def judged(run: dict, allowance: int, budget: int) -> dict:
    """One validation run under the growth rule at the declared length: its projection and whether it fails."""
    from gpu_budget.declare.scenario import Budget
    from gpu_budget.judge import growth

    rule = {**growth.ALLOWANCE, "ram": allowance, "ram_tree": allowance}
    check = growth.check(run["steps"], run["peaks"], Budget(ram=budget), DECLARED_STEPS, rule)
    return {"failed": bool(check.breaches), "message": "; ".join(check.breaches + check.notes), **check.to_json()}


def measure(name: str, scenario, stage: str, preload: tuple[str, ...]) -> dict:
    from benchmarks.session import ASSETS
    from gpu_budget.isolate import forkserver

    assets = ASSETS / scenario.asset_key("tiny")
    if scenario.prepare:
        forkserver.prepare_assets(scenario.to_json("tiny"), assets, 1800, 2, preload)
    m = forkserver.measure(scenario.to_json("tiny"), assets, 1800, THREADS, preload, malloc="steady")
    if not m.ok:
        raise RuntimeError(f"{name}: {m.error}")
    return {"case": name, "stage": stage, "peaks": dict(m.peaks), "steps": list(m.steps), "wall_s": m.wall_seconds,
            "exit_code": m.info.get("exit_code")}


def main() -> None:
    from gpu_budget.isolate import forkserver
    from gpu_budget.units import parse_size

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each kind (calibration, validation, leak)")
    parser.add_argument("--steps", type=int, default=8, help="optimizer steps per run")
    args = parser.parse_args()
    preload, chosen, t_start = gate_preload(), cases(args.steps), time.perf_counter()
    forkserver.probe(preload=preload)
    data = {"runs_per_kind": args.runs, "steps": args.steps, "leak_mib": LEAK_MIB, "declared_steps": DECLARED_STEPS,
            "budget": parse_size(BUDGET), "threads": THREADS, "targets": GROWTH_TARGETS, "runs": []}

    def save(done: bool = False) -> None:
        write(SECTION, {**data, "complete": done, "wall_s": round(time.perf_counter() - t_start, 1)})

    for i in range(args.runs):
        for kind in KINDS:
            name, stage = kind.removesuffix(" calibration"), "calibration" if kind.endswith("calibration") else "validation"
            print(f"growth: round {i + 1} of {args.runs}, {kind} ({time.strftime('%H:%M')})", flush=True)
            data["runs"].append({"round": i, **measure(name, chosen[name], stage, preload)})
            print(f"  ram_tree per step (MiB): {[round(s['ram_tree'] / MIB, 2) for s in data['runs'][-1]['steps']]}",
                  flush=True)
            save()
    data["allowance"] = allowance_of(data["runs"])
    for run in data["runs"]:
        if run["stage"] == "validation":
            run["judged"] = judged(run, data["allowance"], data["budget"])
    save(done=True)
    print(json.dumps(growth_summary(json.loads((RESULTS / f"{SECTION}.json").read_text())), indent=1))


if __name__ == "__main__":
    main()
