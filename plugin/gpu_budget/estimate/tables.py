"""The estimate CLI's markdown: estimates per case, or estimates against measured runs (--validate)."""

from __future__ import annotations

from collections.abc import Sequence

from gpu_budget.estimate.on_card import card_lines
from gpu_budget.estimate.rows import EstimateOutput, EstimateRow, Validation, ValidationRow
from gpu_budget.units import format_size

CATEGORIES = ("parameters", "gradients", "optimizer_state", "activations")


def _signed(value: int | None) -> str:
    return "-" if value is None else ("+" if value >= 0 else "") + format_size(value)


def estimate_table(rows: Sequence[EstimateRow], cuda: bool) -> str:
    """One row per case; where a CUDA context was given (--cuda-context), the tensor peak plus it beside the estimate."""
    metric = "estimated allocated GPU peak (CUDA mode)" if cuda else "estimated tensor peak (CPU)"
    shown = (*CATEGORIES, "workspaces") if cuda else CATEGORIES  # cuBLAS's, CUDA mode only
    context = any(r.device_peak is not None for r in rows)
    allocator = " | through the allocator: allocated | reserved" if cuda else ""
    lines = [f"| case | {metric} | " + " | ".join(shown) + f"{allocator}{' | with the CUDA context' * context} | at | "
             "seconds |", "|---" * (len(shown) + 4 + 2 * cuda + context) + "|"]
    for r in rows:
        split = " | ".join(format_size(r.at_peak.get(c, 0)) for c in shown)
        through = f" | {format_size(r.allocated_peak)} | {format_size(r.reserved_peak)}" if cuda else ""
        device = f" | {format_size(r.device_peak)}" if context else ""
        lines.append(f"| {r.label} | {format_size(r.estimate)} | {split}{through}{device} | {r.estimate_phase} | "
                     f"{r.estimate_seconds} |")
    return "\n".join(lines)


def error_table(result: Validation) -> str:
    """Absolute: estimate vs measured step peak minus the floor. Increment: what the steps add, on both sides."""
    lines = [("| case | estimate (tensors) | measured step peak | minus floor | error | error "
              "| step increment: estimated | measured | error | estimate s | real run s |"), "|---" * 11 + "|"]
    for r in result.rows:
        added, error = r.measured_added, r.error
        rel = "-" if not added else f"{error / added:+.0%}"
        lines.append(f"| {r.label} | {format_size(r.estimate)} | {format_size(r.measured_step_peak)} | "
                     f"{format_size(added)} | {_signed(error)} | {rel} | {format_size(r.estimated_increment)} | "
                     f"{format_size(r.measured_increment)} | {_signed(r.increment_error)} | {r.estimate_seconds} | "
                     f"{r.real_seconds} |")
    return "\n".join(lines)


def failed_runs(result: Validation) -> str:
    """A line per case whose real run failed: the table shows no measured figure for it, this says why."""
    return "\n".join(f"{r.label}: the real run failed ({r.failure}): no measured figure" for r in result.rows
                     if r.failure is not None)


def basis(rows: Sequence[EstimateRow | ValidationRow]) -> str:
    """What each estimate rests on, under its table: the builder's notes (what it simplified) and the values it
    could not know and assumed (fake tensors have none), so no printed figure hides them."""
    lines = []
    for r in rows:
        lines += [f"{r.label}: note: {note}" for note in r.notes]
        if r.assumed:
            count = sum(r.assumed.values())
            ops = ", ".join(f"{op} x{n}" for op, n in sorted(r.assumed.items()))
            lines.append(f"{r.label}: assumed {count} value{'s' * (count != 1)} it cannot know (computed from weights "
                         f"or random numbers; docs/estimator.md): {ops}")
    return "\n".join(lines)


def left_out(output: EstimateOutput) -> str:
    """A line per case given that could not be estimated: the table has no row for it, this says why (the saved
    table and --render say it too, not only the terminal that ran it)."""
    return "\n".join(f"{label}: not estimated ({why}): no row in the table" for label, why in output.left_out.items())


def render_output(output: EstimateOutput) -> str:
    """The markdown of one run's results: the validation with its floor (and its failed runs), or the estimates;
    each followed by the cases not estimated, what the estimates rest on, and the estimates by how each stands on
    the card given (--card)."""
    if output.validation is not None:
        under = "\n\n".join(part for part in (left_out(output), failed_runs(output.validation),
                                               basis(output.validation.rows)) if part)
        return (f"Floor (an empty measured child, same forkserver preload): {format_size(output.validation.floor)}.\n\n"
                + error_table(output.validation) + (f"\n\n{under}" if under else ""))
    parts = (left_out(output), basis(output.estimates), card_lines(output.estimates, output.card, output.cublas_workspace) if output.card and output.estimates else "")
    under = "\n\n".join(part for part in parts if part)
    return estimate_table(output.estimates, output.device != "cpu") + (f"\n\n{under}" if under else "")
