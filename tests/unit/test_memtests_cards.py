"""memtests/cards.py: each tiny card is recomputed from the committed H200 reports it names, so none drifts."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "memtests"))
import cards  # memtests' own module, found on its folder


def _as_reported(report: str, scenario: str) -> dict:
    rows = json.loads((ROOT / report).read_text())["results"]
    return next(r for r in rows if r["nodeid"].startswith(f"memtests/test_{scenario}.py::test_as_reported"))


@pytest.mark.parametrize("scenario", sorted(cards.MEASURED))
def test_each_tiny_card_rests_on_the_committed_peaks_and_context(scenario):
    card, real_report, context, tiny, real = cards.MEASURED[scenario]
    prefix = {"s3": "s3_qwen2_audio", "s4": "s4_wrap_order", "s1": "s1_wav2vec2"}[scenario]
    tiny_row, real_row = _as_reported(cards.TINY_REPORT, prefix), _as_reported(real_report, prefix)
    assert tiny_row["peaks"]["vram_allocated"] == tiny and real_row["peaks"]["vram_allocated"] == real
    load = tiny_row["phases"]["load"]
    assert load["vram_device"] - load["vram_reserved"] == context
    assert cards.CARDS[scenario]["real"] == card
    assert cards.CARDS[scenario]["tiny"] == cards.proportional(card, context, tiny, real)


def test_a_proportional_card_keeps_the_context_whole_and_scales_the_rest():
    assert cards.proportional("T4", 512 * 2**20, 1, 2) == f"{(512 * 2**20 + (round(14.75 * 2**30) - 512 * 2**20) // 2) // 2**20} MiB"
