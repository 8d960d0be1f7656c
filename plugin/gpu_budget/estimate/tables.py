"""The estimate CLI's markdown: estimates per case, or estimates against measured runs (--validate)."""

from __future__ import annotations

from typing import Any

from gpu_budget.units import format_size

CATEGORIES = ("parameters", "gradients", "optimizer_state", "activations")


def _signed(value: int | None) -> str:
    return "-" if value is None else ("+" if value >= 0 else "") + format_size(value)


def estimate_table(rows: list[dict[str, Any]], cuda: bool) -> str:
    metric = "estimated allocated GPU peak (CUDA mode)" if cuda else "estimated tensor peak (CPU)"
    shown = (*CATEGORIES, "workspaces") if cuda else CATEGORIES  # cuBLAS's, CUDA mode only
    allocator = " | through the allocator: allocated | reserved" if cuda else ""
    lines = [f"| case | {metric} | " + " | ".join(shown) + f"{allocator} | at | seconds |",
             "|---" * (len(shown) + 4 + 2 * cuda) + "|"]
    for r in rows:
        split = " | ".join(format_size(r["at_peak"].get(c, 0)) for c in shown)
        through = (f" | {format_size(r.get('allocated_peak'))} | {format_size(r.get('reserved_peak'))}" if cuda else "")
        lines.append(f"| {r['label']} | {format_size(r['estimate'])} | {split}{through} | {r['estimate_phase']} | "
                     f"{r['estimate_seconds']} |")
    return "\n".join(lines)


def error_table(result: dict[str, Any]) -> str:
    """Absolute: estimate vs measured step peak minus the floor. Increment: what the steps add, on both sides."""
    lines = [("| case | estimate (tensors) | measured step peak | minus floor | error | error "
              "| step increment: estimated | measured | error | estimate s | real run s |"), "|---" * 11 + "|"]
    for r in result["rows"]:
        added, error = r["measured_added"], r["error"]
        rel = "-" if not added else f"{error / added:+.0%}"
        est_inc = r["estimate"] - r["estimate_at_step_start"]
        real_inc = None if r["measured_entering_steps"] is None or r["measured_step_peak"] is None \
            else r["measured_step_peak"] - r["measured_entering_steps"]
        lines.append(f"| {r['label']} | {format_size(r['estimate'])} | {format_size(r['measured_step_peak'])} | "
                     f"{format_size(added)} | {_signed(error)} | {rel} | {format_size(est_inc)} | {format_size(real_inc)} "
                     f"| {_signed(r['increment_error'])} | {r['estimate_seconds']} | {r['real_seconds']} |")
    return "\n".join(lines)


def render(data: dict[str, Any]) -> str:
    """The markdown of a saved --json file (validation or estimates)."""
    if "rows" in data:
        return (f"Floor (an empty measured child, same forkserver preload): {format_size(data['floor'])}.\n\n"
                + error_table(data))
    return estimate_table(data["estimates"], data["device"] != "cpu")
