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
from collections import defaultdict

from benchmarks import session
from benchmarks.common import MIB, THREADS, missing, ran, write

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


# -- RESULTS.md section 5, from this script's JSON (benchmarks/report.py joins the sections) -------------------------

PREVIOUS_DEFAULT = (0.02, 16 * MIB)  # the default before this benchmark set it: judged again for comparison


def detection_counts(det: dict, rel: float, abs_: int) -> dict:
    """(case, fraction) -> (flagged, runs, changes) judged by the gate's own judge under one tolerance."""
    from gpu_budget.judge.compare import judge, ram_compared
    from gpu_budget.model.budget import Budget, Tolerance
    from gpu_budget.model.entry import Entry
    from gpu_budget.model.figures import Peaks
    from gpu_budget.model.result import Measurement

    tol, out = Tolerance(rel, abs_), defaultdict(lambda: [0, 0, []])
    for r in det["runs"]:
        m, base = Measurement(status="ok", peaks=Peaks.from_json(r["peaks"])), Peaks.from_json(det["baselines"][r["case"]])
        verdict = judge(m, Budget(), Entry(peaks=base), tol, ci=True, update=False)
        cell = out[(r["case"], r["fraction"])]
        cell[0] += verdict.verdict == "regression"
        cell[1] += 1
        cell[2].append(verdict.change[ram_compared(m.peaks, base)[0]])  # as judge compared
    return out


def section(det: dict | None) -> list[str]:
    """Section 5 from detection.json: planted regressions judged at the default tolerance."""
    from gpu_budget.declare.marks import DEFAULT_TOLERANCE as TOL

    out = ["## 5. Detection power at the default tolerance", ""]
    if det is None:
        return out + missing("detection", "detection")
    now = detection_counts(det, TOL.rel, TOL.abs)
    before = detection_counts(det, *PREVIOUS_DEFAULT)
    at_run = det["tolerance_at_run"]
    out += [ran(det), "",
            (f"A baseline from one fresh session, then {det['rounds']} fresh sessions each measuring a clean child and "
            f"children with a planted regression (a retained, touched allocation of 2, 5 and 10 % of the baseline peak, "
            f"the scenario param `plant_bytes`), judged by the gate's own `judge` (`benchmarks/detection_power.py`). "
            f"Default tolerance: rel {TOL.rel:.1%} + {TOL.abs / MIB:.0f} MiB (the run judged under rel {at_run['rel']:.1%} + "
            f"{at_run['abs'] / MIB:.0f} MiB); the same peaks judged under the previous default "
            f"({PREVIOUS_DEFAULT[0]:.0%} + {PREVIOUS_DEFAULT[1] / MIB:.0f} MiB) for comparison."), ""]
    for case, base in det["baselines"].items():
        limit = TOL.limit(base["ram"])
        out += [(f"**{case}**: baseline {base['ram'] / MIB:.1f} MiB, regression limit {limit / MIB:.1f} MiB "
                f"(+{(limit - base['ram']) / MIB:.1f} MiB, {(limit - base['ram']) / base['ram']:.1%})"), "",
                "| planted | runs | flagged (default) | flagged (previous default) | measured change (min .. max) |",
                "|---|---|---|---|---|"]
        for frac in det["fractions"]:
            flagged, n, changes = now[(case, frac)]
            label = "none (false alarms)" if frac == 0 else f"+{frac:.0%}"
            out.append(f"| {label} | {n} | {flagged} of {n} | {before[(case, frac)][0]} of {n} | "
                       f"{min(changes):+.2%} .. {max(changes):+.2%} |")
        out.append("")
    return out


def headline(det: dict | None) -> list[str]:
    """The headline's lines for section 5: what the default tolerance flags, clean and planted, per case."""
    if not det:
        return []
    from gpu_budget.declare.marks import DEFAULT_TOLERANCE as TOL

    counts = detection_counts(det, TOL.rel, TOL.abs)
    out = []
    for case in det["baselines"]:
        cells = ", ".join(f"{'clean' if f == 0 else f'+{f:.0%}'} {counts[(case, f)][0]}/{counts[(case, f)][1]}"
                          for f in det["fractions"])
        out.append(f"- Flagged at the default tolerance (rel {TOL.rel:.1%} + {TOL.abs / MIB:.0f} MiB), {case}: {cells}.")
    return out


if __name__ == "__main__":
    main()
