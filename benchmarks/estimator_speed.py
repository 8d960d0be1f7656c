"""Section 10, estimator speed: the estimator's step on fake tensors against the same step on real tensors.

`estimate(..., fake=False)` runs the identical code path (builder, steps,
tracker) on real CPU tensors, so the two times compare the cost of faking,
nothing else. One process, imports warmed by one untimed run of each mode per
case, then rounds alternating fake and real (the order swapped each round);
each round's ratio real / fake is a figure, summarised as a geometric mean with
a 95 % t-interval (benchmarks/overhead.py's `interval`). Tiny scale, 2 torch
threads.

    python -m benchmarks.estimator_speed [--rounds 5]
"""

from __future__ import annotations

import argparse
import os

from benchmarks.common import med, missing, ran, write
from benchmarks.overhead import interval

CASES = ("s1 as-reported", "s1 truncate", "s5 as-reported")  # names in benchmarks.common.scenarios()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import torch

    from benchmarks.common import scenarios
    from gpu_budget.estimate import estimate_scenario

    torch.set_num_threads(2)
    chosen, cases = scenarios(), []
    for name in CASES:
        scn = chosen[name]
        for fake in (True, False):  # warm-up: imports and first-use costs, not timed
            estimate_scenario(scn, "tiny", fake=fake)
        runs = []
        for rnd in range(args.rounds):
            for fake in ((True, False) if rnd % 2 == 0 else (False, True)):
                e = estimate_scenario(scn, "tiny", fake=fake)
                runs.append({"round": rnd, "fake": fake, "seconds": e.seconds, "step_peak": e.step_peak,
                             "load_average": os.getloadavg()[0]})
                print(f"estimator speed {name} round {rnd} {'fake' if fake else 'real'}: {e.seconds:.2f} s", flush=True)
        fake_s = {r["round"]: r["seconds"] for r in runs if r["fake"]}
        real_s = {r["round"]: r["seconds"] for r in runs if not r["fake"]}
        cases.append({"case": name, "runs": runs, "fake_median_s": med(list(fake_s.values())),
                      "real_median_s": med(list(real_s.values())),
                      "speedup": interval([real_s[k] / fake_s[k] for k in fake_s])})
    write("estimator_speed", {"threads": 2, "scale": "tiny", "rounds": args.rounds, "cases": cases})


# -- RESULTS.md section 10, from this script's JSON (benchmarks/report.py joins the sections) ------------------------

def estimator_speed_table(es: dict) -> list[str]:
    """The estimator's fake-tensor step against the same step on real tensors (docs/estimator.md quotes it)."""
    out = [("| case | fake tensors (estimate), median s | real tensors, median s | speed-up, real / fake per round "
            "(geomean, 95 % interval) | rounds | load average during the runs |"), "|---|---|---|---|---|---|"]
    for c in es["cases"]:
        loads = [r["load_average"] for r in c["runs"]]
        sp = c["speedup"]
        out.append(f"| {c['case']} | {c['fake_median_s']:.2f} | {c['real_median_s']:.2f} | {sp['geomean']:.1f}x "
                   f"({sp['low']:.1f} .. {sp['high']:.1f}) | {sp['n']} | {min(loads):.1f} .. {max(loads):.1f} |")
    return out


def section(es: dict | None) -> list[str]:
    """Section 10 from estimator_speed.json: the estimator's fake-tensor step against real tensors."""
    out = ["## 10. Estimator speed", ""]
    if es is None:
        return out + missing("estimator_speed", "estimator_speed")
    return out + [ran(es), "",
                  (f"One case's training step (two optimizer steps) at {es['scale']} scale run by the estimator on fake "
                   f"tensors and by the same code on real CPU tensors (`estimate(..., fake=False)`), {es['threads']} torch "
                   f"threads, in one process with imports warmed, rounds alternating the two (`benchmarks/estimator_speed.py`)."),
                  "", *estimator_speed_table(es), ""]


if __name__ == "__main__":
    main()
