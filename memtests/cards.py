"""The cards the write-ups trained on, and the proportional cards their tiny models run as on.

At real scale a case runs as on its write-up's card (card=): S3 a 24 GB RTX 3090, S4 an 80 GB A100, S1 Colab's
T4. A tiny model on that card would never come near its limit, so at tiny scale the card is shrunk by the ratio of
the as-reported case's allocated peak at tiny scale to the one at real scale, both measured on the H200. The CUDA
context does not shrink with the model (each process holds about half a GiB whatever it trains), so it is kept
whole: tiny card = context + (card - context) x ratio, where the context is NVML's figure less the allocator's
reservation in the load phase of the same run. The cap then leaves the tiny run the share of its card that the real
run has of its own. On a CPU host a card changes nothing (there is no allocator to cap): the CPU gate is unchanged.

tests/unit/test_memtests_cards.py recomputes each tiny card from the committed reports below.
"""

from gpu_budget.model.card import by_name
from gpu_budget.units import MiB

TINY_REPORT = "benchmarks/results/gpu-h200-tiny-2.report.json"


def proportional(card: str, context: int, tiny_peak: int, real_peak: int) -> str:
    """The tiny card standing for `card`, as a size in whole MiB (rounded down)."""
    capacity = by_name(card).capacity
    return f"{int((context + (capacity - context) * tiny_peak / real_peak) // MiB)} MiB"


# scenario: (card, real-scale report, the as-reported case's context and allocated peaks: tiny, real), from
# TINY_REPORT and the real-scale report named
MEASURED = {
    "s3": ("RTX 3090", "benchmarks/results/gpu-s3-1.report.json", 639_631_360, 1_988_210_688, 22_960_609_792),
    "s4": ("A100 80GB", "benchmarks/results/gpu-s4-1.report.json", 545_259_520, 105_794_560, 88_294_238_720),
    "s1": ("T4", "benchmarks/results/gpu-real-1.report.json", 543_162_368, 107_181_568, 3_411_212_800),
}
CARDS = {scenario: {"tiny": proportional(card, context, tiny, real), "real": card}
         for scenario, (card, _, context, tiny, real) in MEASURED.items()}
