"""Section 5, detection power: planted +2/+5/+10 % regressions vs clean runs, judged as the gate judges.

For each configuration: a baseline from one fresh session (as a committed
baseline comes from an earlier run), then `--rounds` fresh sessions, each
measuring a clean child and children with a planted regression (a retained,
touched allocation of 2, 5 and 10 % of the baseline peak), in rotated order.
Every peak is judged by gpu_budget.judge.compare.judge against the baseline under
the default tolerance; RESULTS.md also judges the same peaks under the
previous default, for comparison.

    python -m benchmarks.detection_power [--rounds 10] [--cases "s1 truncate,s5 as-reported"]
"""

from __future__ import annotations

import argparse

from benchmarks import session
from benchmarks.common import THREADS, write

FRACTIONS = (0.0, 0.02, 0.05, 0.10)
DEFAULT_CASES = "s1 truncate,s5 as-reported"


def main() -> None:
    from gpu_budget.declare.marks import DEFAULT_TOLERANCE

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--cases", default=DEFAULT_CASES)
    args = parser.parse_args()
    names = args.cases.split(",")
    print("detection: baseline session", flush=True)
    baselines = {r["case"]: r["peaks"] for r in session.fresh([{"case": n} for n in names])}
    jobs = [{"case": n, "fraction": f, "plant_bytes": int(baselines[n]["ram"] * f)} for n in names for f in FRACTIONS]
    runs = []
    for i in range(args.rounds):
        print(f"detection: round {i + 1} of {args.rounds}", flush=True)
        k = i % len(jobs)
        runs += [{"round": i, **r} for r in session.fresh(jobs[k:] + jobs[:k])]
    write("detection", {"threads": THREADS, "rounds": args.rounds, "fractions": list(FRACTIONS), "baselines": baselines,
                        "tolerance_at_run": {"rel": DEFAULT_TOLERANCE.rel, "abs": DEFAULT_TOLERANCE.abs}, "runs": runs})


if __name__ == "__main__":
    main()
