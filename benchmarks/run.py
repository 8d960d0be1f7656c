"""The one command: run benchmark sections, each in its own process, then rewrite RESULTS.md from all results.

Each section writes benchmarks/results/<section>.json; RESULTS.md is rebuilt
from every JSON present, so sections can be re-run one at a time and the file
always shows real runs. `suite` is left out unless named: it runs the whole
memory gate twice and needs a quiet machine; so is `command_noise` (21 fresh
pytest sessions of a Trainer script, over ten minutes on a busy machine).

    python -m benchmarks.run                                   # every section but suite, setups, command_noise
    python -m benchmarks.run --only fidelity,overhead          # some sections
    python -m benchmarks.run --only suite                      # the gate's wall time (quiet machine)
    python -m benchmarks.run --only command_noise              # a Trainer script gated as a command, 21 sessions
    python -m benchmarks.run --only growth                     # the growth rule on a catalogue of shapes, 21 sessions
    python -m benchmarks.run --only growth_long                # the growth rule over runs of 40 to 200 steps
    python -m benchmarks.run --only growth_noise               # the growth rule on noisy steps, before and now
    python -m benchmarks.run --only growth_sawtooths           # every sawtooth of a grid, before and now
    python -m benchmarks.run --only growth_s5                  # the CPU gate's growth case, 15 sessions
    python -m benchmarks.run --only growth_arenas              # what S1's clean Trainer script grows by, 8 sessions
    python -m benchmarks.run --only stored_spread              # noisy cases recorded over N runs, then judged
    python -m benchmarks.run --only against                    # --gpu-budget-against and bisect in a git repo
    python -m benchmarks.run --only sweep_cost                 # environments made, a sweep's false alarms and wall time
    python -m benchmarks.run --only gate_levers                # what the tiny gate's levers take out, in CPU s
    python -m benchmarks.run --only gate_order                 # the gate before and after its order's hook, 11 sessions
    python -m benchmarks.run --only session_endings            # sessions ended early, 40 of them (this checkout alone;
                                                               # the module's --before measures a base side by side)
    python -m benchmarks.run --report                          # only rewrite RESULTS.md
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from benchmarks import report
from benchmarks.common import ROOT

SECTIONS = {  # section -> module (the order they run in)
    "fidelity": "benchmarks.fidelity",
    "tree_sum": "benchmarks.tree_sum",
    "overhead": "benchmarks.overhead",
    "isolation": "benchmarks.isolation_cost",
    "session_endings": "benchmarks.session_endings",
    "repeatability": "benchmarks.repeatability",
    "detection": "benchmarks.detection_power",
    "command_noise": "benchmarks.command_noise",
    "growth": "benchmarks.growth_catalogue",
    "growth_long": "benchmarks.growth_long",
    "growth_noise": "benchmarks.growth_noise",
    "growth_sawtooths": "benchmarks.growth_sawtooths",
    "growth_s5": "benchmarks.growth_s5",
    "growth_arenas": "benchmarks.growth_arenas",
    "stored_spread": "benchmarks.stored_spread",
    "against": "benchmarks.against_base",
    "sweep_cost": "benchmarks.sweep_cost",
    "preload": "benchmarks.preload_cost",
    "checkpoint_build": "benchmarks.checkpoint_build",
    "estimator_speed": "benchmarks.estimator_speed",
    "suite": "benchmarks.suite",
    "gate_levers": "benchmarks.gate_levers",
    "gate_order": "benchmarks.gate_order",
    "setups": "benchmarks.setups",
}
# setups needs the environments it emulates; command_noise runs 21 pytest sessions of a Trainer script (~8-15 min);
# growth runs 21 pytest sessions of the growth catalogue (about 45 min on a shared 2-core host), growth_long 12
# sessions of 40 to 200 steps (4 of each length), growth_s5 15 sessions of one case, growth_arenas 8 sessions of seven
# S1 cases (about 4 min each on a loaded 2-core host); stored_spread about 55 pytest sessions
# of two noisy cases (17 min there), against 33 pytest runs, 20 of them comparing two revisions (32 min there);
# sweep_cost makes 6 environments and runs 20 pytest sessions (17 min there); gate_order runs the whole tiny gate
# 11 times (27 min there)
DEFAULT = [s for s in SECTIONS if s not in ("suite", "setups", "command_noise", "growth", "growth_long", "growth_s5",
                                            "growth_arenas",
                                            "stored_spread", "against",
                                            "sweep_cost", "gate_order", "session_endings")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help=f"comma-separated sections: {', '.join(SECTIONS)}")
    parser.add_argument("--report", action="store_true", help="only rewrite RESULTS.md from the JSON present")
    args = parser.parse_args()
    chosen = [] if args.report else [s for s in args.only.split(",") if s] or DEFAULT
    unknown = set(chosen) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s) {', '.join(sorted(unknown))}: choose from {', '.join(SECTIONS)}")
    for section in chosen:
        t0 = time.perf_counter()
        print(f"== {section}", flush=True)
        subprocess.run([sys.executable, "-m", SECTIONS[section]], cwd=ROOT, check=True)
        print(f"== {section}: {time.perf_counter() - t0:.0f} s", flush=True)
    report.main()


if __name__ == "__main__":
    main()
