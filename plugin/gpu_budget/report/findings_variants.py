"""FINDINGS.md's variants: a scenario run with other params than its as-reported run (Pair.knobs), shown apart.

A variant (another batch size, longer clips) is not a remedy: its peak beside
the as-reported one is a change, higher or lower, never "works" or a saving,
and no fix library entry is credited with it. Read by the CPU tables
(findings.py) and the GPU tables (findings_gpu.py) alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpu_budget.report.findings_pairs import Pair, bounded_saving, cell, noise_said
from gpu_budget.units import format_change

READS = {"works": "lower", "makes it worse": "higher", "no effect": "no change past the tolerance"}


def change(e: Pair) -> str:
    """The variant's peak against the as-reported one, (after - before) / before; "at most" where the as-reported run
    died of out-of-memory (its figure a lower bound), "at least" where the variant's did; "-" where either bound
    tells nothing; "within noise (±X)" inside the noise band (noise_said)."""
    if bounded_saving(e.before, e.after, e.before_died, e.after_died) == "-":  # none to compute, or a bound that tells nothing
        return "-"
    bound = "at most " if e.before_died else "at least " if e.after_died else ""
    return noise_said(f"{bound}{format_change((e.after - e.before) / e.before)}", e)


def _line(e: Pair, card: str | None) -> str:
    head = f"| {cell(card)} " if card is not None else ""
    return (f"{head}| {cell(e.variant)} | {cell('; '.join(e.knobs))} | {cell(', '.join(e.fixes) or '-')} | {e.scale} "
            f"| {e.metric or '-'} | {e.as_reported} | {e.with_fix} | {change(e)} | {cell(READS.get(e.verdict, e.verdict))} "
            f"| {e.main} |")


def variant_lines(entries: Sequence[tuple[str | None, Pair]]) -> list[str]:
    """The variants of a scenario (each with its card, None on the CPU) beside its as-reported run; none where none."""
    if not entries:
        return []
    carded = any(card is not None for card, _ in entries)
    head = "| card " if carded else ""
    return ["Variants of the scenario (other params than the as-reported run, no fix between them sets them; not fixes):",
            "", (f"{head}| variant | params: as reported → variant | fixes | scale | metric | as reported | the variant "
                 "| change | reads | main process: as reported, the variant |"),
            "|---" * (10 + carded) + "|", *(_line(e, card) for card, e in entries), ""]
