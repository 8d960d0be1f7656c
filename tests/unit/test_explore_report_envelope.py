"""The JSON report says which of an envelope's knobs were ranges and which lists of values, and reads older ones."""

import json
from pathlib import Path

from gpu_budget.search.exploration import Exploration
from gpu_budget.search.explore import Envelope, explore

OLDER = Path(__file__).parents[2] / "benchmarks/results/explore-s5-card-tiny.report.json"  # written before the change


def test_a_range_and_a_list_of_two_values_read_apart_in_the_report():
    """A range's spec was written as [lo, hi], so (1, 8) and [1, 8] (batch 1 to 8; or batch 1 and batch 8 alone)
    read the same in the report."""
    found = explore("t", Envelope({"batch": (1, 8), "micro": [1, 8]}), "1 GiB", estimate=lambda k: k["batch"] << 20,
                    measure=None, max_examples=2)
    written = json.loads(json.dumps(found.to_json()))
    assert written["envelope"] == {"batch": {"range": [1, 8]}, "micro": {"values": [1, 8]}}
    assert Exploration.from_json(written).to_json() == written


def test_an_older_report_is_read_its_lists_kept_as_listed():
    """Older reports wrote [lo, hi] or the values, without saying which: read back as listed, never guessed, and
    written back as they were."""
    older = json.loads(OLDER.read_text())["explorations"][0]["exploration"]
    assert older["envelope"]["image"] == [64, 96, 128, 160, 192, 224]  # the older shape, as committed
    found = Exploration.from_json(older)
    assert found.envelope == {"batch_size": {"listed": [1, 256]}, "image": {"listed": [64, 96, 128, 160, 192, 224]}}
    assert found.summary()  # the report's lines, the envelope's top among them, still come from it
    assert found.to_json() == older  # written back as it was: it said no more
