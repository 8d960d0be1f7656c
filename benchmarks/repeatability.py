"""Run-to-run spread of the gated metric over fresh children: what the default tolerance rests on.

For each scenario, N fresh measured children of one configuration; the spread
(max - min) of the host RAM peak, in MiB and in % of the median. The default
tolerance (gpu_budget.marks.DEFAULT_TOLERANCE) must cover the widest spread
while a +10 % regression still fails.

    python benchmarks/repeatability.py [--runs 5] [--only s1,s3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "memtests"))

PRELOAD = ("torch", "transformers", "peft", "accelerate", "datasets",
           "gpu_budget.scenarios.s1_wav2vec2", "gpu_budget.scenarios.s3_qwen2_audio",
           "gpu_budget.scenarios.s4_wrap_order")


def scenarios() -> dict:
    from s1_scenarios import S1
    from s3_scenarios import AS_REPORTED as S3
    from s4_scenarios import FIXED as S4

    return {"s1": S1, "s3": S3, "s4": S4}


def main() -> None:
    from gpu_budget import isolate
    from gpu_budget.marks import DEFAULT_TOLERANCE

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", default="")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    chosen = {k: v for k, v in scenarios().items() if not args.only or k in args.only.split(",")}
    assets_root = Path(tempfile.mkdtemp(prefix="gpu-budget-repeat-"))
    out = {}
    print("| scenario | runs | median RAM peak | min | max | spread MiB | spread % | default tolerance at this size |")
    print("|---|---|---|---|---|---|---|---|")
    for name, scn in chosen.items():
        job = scn.to_json("tiny")
        assets = assets_root / scn.asset_key("tiny")
        isolate.prepare_assets(job, assets, 900, args.threads, PRELOAD)
        peaks = []
        for _ in range(args.runs):
            m = isolate.measure(job, assets, 900, args.threads, PRELOAD)
            assert m["status"] == "ok", m["error"]
            peaks.append(m["peaks"]["ram"])
        med = statistics.median(peaks)
        spread = max(peaks) - min(peaks)
        allowed = DEFAULT_TOLERANCE.limit(med) - med
        out[name] = {"peaks": peaks, "median": med, "spread": spread}
        print(f"| {name} | {len(peaks)} | {med / 2**20:.1f} MiB | {min(peaks) / 2**20:.1f} | {max(peaks) / 2**20:.1f} "
              f"| {spread / 2**20:.1f} | {spread / med:.2%} | +{allowed / 2**20:.1f} MiB ({allowed / med:.1%}) |")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
