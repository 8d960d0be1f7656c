"""The gate's outputs: a terminal table, GitHub step-summary markdown and a JSON report.

All three are rendered from the same list of result rows (plain dicts, the
JSON report's `results`), so they cannot disagree.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gpu_budget.units import format_size

REPORT_VERSION = 1
HEADERS = ["test", "scale", "RAM peak", "VRAM peak", "budget", "baseline", "change", "fixes", "verdict"]


def _budget(row: dict) -> str:
    parts = []
    if row["budget"]["ram"] is not None:
        parts.append(f"RAM {format_size(row['budget']['ram'])}")
    if row["budget"]["vram"] is not None:
        parts.append(f"VRAM {format_size(row['budget']['vram'])}")
    return ", ".join(parts) or "-"


def _baseline(row: dict) -> str:
    base = row.get("baseline")
    if not base:
        return "-"
    parts = [format_size(base["peaks"].get("ram"))]
    if base["peaks"].get("vram_allocated") is not None:
        parts.append(format_size(base["peaks"]["vram_allocated"]))
    return " / ".join(parts)


def _change(row: dict) -> str:
    parts = [f"{v:+.1%}" for k, v in (row.get("change") or {}).items() if v is not None]
    return " / ".join(parts) or "-"


def _verdict(row: dict) -> str:
    text = row["verdict"]
    if row.get("expect") and row["verdict"] == row["expect"]:
        text += " (expected)"
    return text if row.get("passed", True) else f"{text} FAIL"


def table_rows(rows: list[dict]) -> list[list[str]]:
    return [
        [
            row["nodeid"],
            row["scale"],
            format_size(row["peaks"].get("ram")),
            format_size(row["peaks"].get("vram_allocated")),
            _budget(row),
            _baseline(row),
            _change(row),
            ", ".join(row["fixes"]) or "-",
            _verdict(row),
        ]
        for row in rows
    ]


def terminal_table(rows: list[dict]) -> str:
    from tabulate import tabulate

    return tabulate(table_rows(rows), headers=HEADERS, tablefmt="simple")


def markdown(rows: list[dict], hardware: dict | None) -> str:
    from tabulate import tabulate

    failed = [r for r in rows if not r.get("passed", True)]
    head = f"### GPU budget: {len(rows)} measured, {len(failed)} failed"
    if hardware:
        head += f" on `{hardware.get('key')}`"
    lines = [head, "", tabulate(table_rows(rows), headers=HEADERS, tablefmt="github")]
    for row in failed:
        lines += ["", f"- **{row['nodeid']}**: {row['message']}"]
    return "\n".join(lines) + "\n"


def append_step_summary(rows: list[dict], hardware: dict | None) -> None:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path and rows:
        with open(path, "a") as fh:
            fh.write(markdown(rows, hardware))


def write_json(path: str | Path, rows: list[dict], hardware: dict | None) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps({"version": REPORT_VERSION, "hardware": hardware, "results": rows}, indent=2) + "\n")
    os.replace(tmp, path)
