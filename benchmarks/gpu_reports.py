"""The committed GPU reports, read for the GPU results page: a report by its stem, its measured rows by node id,
and whether a case's allocated peak reproduced from one run to the next (gpu_results.py, gpu_parts.py)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = "benchmarks/results"


def load(stem: str) -> dict:
    return json.loads((ROOT / RESULTS / f"{stem}.report.json").read_text())


def rows(*stems: str) -> dict[str, dict]:
    """The reports' rows that were not skipped, by node id (a later stem's row replaces an earlier one's)."""
    return {r["nodeid"]: r for stem in stems for r in load(stem)["results"] if r["verdict"] != "skipped"}


def reproduced(first: int, second: int | None) -> str:
    """Run 2's allocated peak against run 1's: "exact", the difference in bytes, or "-" where run 2 has none."""
    return "-" if second is None else ("exact" if first == second else f"{second - first:+,d} B")
