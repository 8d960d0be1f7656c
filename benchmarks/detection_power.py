"""Detection power of the default tolerance on a real scenario: planted regressions vs clean runs.

A baseline is recorded from one fresh child; then N clean children and N
children with a planted regression (a retained, touched allocation of +2 %,
+5 %, +10 % of the baseline peak) are judged exactly as the gate judges them.
Prints detections and false alarms per size.

    python benchmarks/detection_power.py [--runs 10] [--scenario s1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from repeatability import PRELOAD, scenarios  # noqa: E402


def main() -> None:
    from gpu_budget import isolate
    from gpu_budget.compare import judge
    from gpu_budget.marks import DEFAULT_TOLERANCE
    from gpu_budget.scenario import Budget

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--scenario", default="s1")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    scn = scenarios()[args.scenario]
    assets = Path(tempfile.mkdtemp(prefix="gpu-budget-detect-")) / scn.asset_key("tiny")
    isolate.prepare_assets(scn.to_json("tiny"), assets, 900, args.threads, PRELOAD)

    def peak(plant: int) -> dict:
        m = isolate.measure(scn.with_params(plant_bytes=plant).to_json("tiny"), assets, 900, args.threads, PRELOAD)
        assert m["status"] == "ok", m["error"]
        return m

    base = peak(0)
    baseline = {"peaks": base["peaks"]}
    ram = base["peaks"]["ram"]
    print(f"scenario {args.scenario}: baseline RAM peak {ram / 2**20:.1f} MiB; default tolerance "
          f"rel {DEFAULT_TOLERANCE.rel:.0%} + {DEFAULT_TOLERANCE.abs / 2**20:.0f} MiB "
          f"(limit +{(DEFAULT_TOLERANCE.limit(ram) - ram) / 2**20:.1f} MiB)\n")
    print("| planted | runs | flagged as regression | measured change (min .. max) |")
    print("|---|---|---|---|")
    for frac in (0.0, 0.02, 0.05, 0.10):
        flagged, changes = 0, []
        for _ in range(args.runs):
            m = peak(int(ram * frac))
            verdict = judge(m, Budget(), baseline, DEFAULT_TOLERANCE, ci=True, update=False)
            flagged += verdict.verdict == "regression"
            changes.append(verdict.change["ram"])
        label = "none (false alarms)" if frac == 0 else f"+{frac:.0%}"
        print(f"| {label} | {args.runs} | {flagged} | {min(changes):+.2%} .. {max(changes):+.2%} |")


if __name__ == "__main__":
    main()
