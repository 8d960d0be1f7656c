"""The GPU validation table: per case, the allocated peak of two runs, reserved and NVML beside it, and the estimate.

    python benchmarks/gpu_compare.py real-1.json real-2.json [--estimates estimates.json] -o gpu-validation.md

Checks what the GPU validation asks: does a second run reproduce the allocated
peak exactly, and do the three VRAM figures nest (allocated <= reserved <=
NVML device, which adds the CUDA context)? Estimates, where given, are matched
by (scenario, fixes, scale) and compared with the measured allocated peak.
Only figures from the reports are printed; a missing one is "-".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "plugin"))
from gpu_budget.units import format_size


def _rows(path: Path) -> dict[str, dict]:
    """The measured rows of a report by node id; none when the report is missing (a run the time budget cut)."""
    if not path.exists():
        return {}
    return {r["nodeid"]: r for r in json.loads(path.read_text())["results"] if r["verdict"] != "skipped"}


def _estimates(path: Path | None) -> dict[tuple, dict]:
    if path is None or not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {(e["scenario"], tuple(sorted(e["fixes"])), e["scale"]): e
            for e in data.get("estimates", []) if e.get("estimate") is not None}


def _error(estimate: int | None, measured: int | None) -> str:
    return "-" if estimate is None or not measured else f"{(estimate - measured) / measured:+.1%}"


def table(first: dict[str, dict], second: dict[str, dict], estimates: dict[tuple, dict]) -> str:
    """One row per case of run 1; the estimates (tensors, through the allocator, reserved) beside what was measured."""
    lines = [("| case | verdict | allocated, run 1 | run 2 | reproduced | reserved | NVML device | NVML matched by | nested "
              "| estimate | error | through the allocator | error | reserved estimate | error |"),
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for nodeid, r1 in first.items():
        r2 = second.get(nodeid, {})
        a1, a2 = r1["peaks"].get("vram_allocated"), (r2.get("peaks") or {}).get("vram_allocated")
        res, dev = r1["peaks"].get("vram_reserved"), r1["peaks"].get("vram_device")
        same = "-" if a1 is None or a2 is None else ("exact" if a1 == a2 else f"{a2 - a1:+,d} B")
        nested = "-" if None in (a1, res, dev) else ("yes" if a1 <= res <= dev else "NO")
        e = estimates.get((r1["scenario"], tuple(sorted(r1["fixes"])), r1["scale"])) or {}
        est, through, reserved = e.get("estimate"), e.get("allocated_peak"), e.get("reserved_peak")
        method = (r1.get("info") or {}).get("nvml_method") or "-"
        lines.append(f"| {nodeid.split('::', 1)[-1]} | {r1['verdict']} | {format_size(a1)} | {format_size(a2)} | {same} "
                     f"| {format_size(res)} | {format_size(dev)} | {method} | {nested} | {format_size(est)} "
                     f"| {_error(est, a1)} | {format_size(through)} | {_error(through, a1)} | {format_size(reserved)} "
                     f"| {_error(reserved, res)} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--estimates", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()
    text = table(_rows(args.first), _rows(args.second), _estimates(args.estimates))
    args.output.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
